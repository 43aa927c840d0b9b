import { Args, Mutation, Query, Resolver } from '@nestjs/graphql';
import { setTimeout as delay } from 'node:timers/promises';
import { Locked } from 'nestjs-redlock';

@Resolver()
export class AccountResolver {
  // Your database: with several app instances, a store they share.
  private readonly closed = new Set<string>();

  @Query(() => Boolean) // a schema needs a Query type: one with mutations only does not start
  isClosed(@Args('email') email: string): boolean {
    return this.closed.has(email);
  }

  @Mutation(() => Boolean, { description: 'true for the call that closed the account' })
  @Locked('account:{args.0}') // the first @Args(): the e-mail address
  async closeAccount(@Args('email') email: string): Promise<boolean> {
    if (this.closed.has(email)) return false;
    await delay(5); // a read-modify-write: safe only under the lock
    this.closed.add(email);
    return true;
  }
}
