/** The stock of one item, as the API returns it. */
export interface StockLevel {
  /** The item's id (the `:id` of the route). */
  id: string;
  /** Units in stock; never negative. */
  quantity: number;
}
