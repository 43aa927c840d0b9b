import { Args, Field, Int, Mutation, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { Locked } from 'nestjs-redlock';
import { StockService } from './stock.service.js';
import { StockStore } from './stock.store.js';

@ObjectType()
export class DecrementResult {
  @Field()
  ok: boolean;

  @Field(() => Int)
  left: number;

  @Field()
  instance: string;
}

/** An Apollo resolver (graphql.main), code first: the mutation's argument names the lock. */
@Resolver()
export class StockResolver {
  constructor(
    private readonly store: StockStore,
    private readonly service: StockService,
  ) {}

  @Query(() => String)
  instance(): string {
    return this.store.instance;
  }

  @Mutation(() => DecrementResult)
  @Locked('stock:{args.0}', { wait: 10_000 })
  async decrement(@Args('id') id: string) {
    return this.store.decrement(id);
  }

  @Mutation(() => DecrementResult)
  @Locked('stock:{args.0}', { wait: 0 })
  async tryDecrement(@Args('id') id: string) {
    return this.store.decrement(id);
  }

  /** Not locked itself: the lock is taken by the provider method it calls. */
  @Mutation(() => DecrementResult)
  async tryDecrementViaService(@Args('id') id: string) {
    return this.service.tryDecrement(id);
  }
}
