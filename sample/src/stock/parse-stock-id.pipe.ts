import { BadRequestException, Injectable, type PipeTransform } from '@nestjs/common';

/**
 * Turns an item id from the URL into its one canonical spelling: ids are case-insensitive,
 * and an all-digit id ignores leading zeros, so `/stock/042`, `/stock/42` and `/stock/0042` are
 * item `42`, and `/stock/SKU-1` is item `sku-1`.
 *
 * Why it matters for the lock: `@Locked('stock:{id}')` locks the id the handler receives, after
 * this pipe, so `042` and `42` take one lock for one stock level (a lock named from the raw URL
 * would give them two: two decrements at once, lost updates).
 *
 * @example
 * decrement(@Param('id', ParseStockIdPipe) id: string)
 */
@Injectable()
export class ParseStockIdPipe implements PipeTransform<unknown, string> {
  transform(value: unknown): string {
    if (typeof value !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(value)) {
      throw new BadRequestException('an item id is 1 to 64 letters, digits, "-" or "_"');
    }
    return /^\d+$/.test(value) ? value.replace(/^0+(?=\d)/, '') : value.toLowerCase();
  }
}
