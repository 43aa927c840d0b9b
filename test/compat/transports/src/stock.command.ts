import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { Locked } from 'nestjs-redlock';
import type { Outcome } from './stock.store.js';
import { StockStore } from './stock.store.js';

/** CQRS: a command whose handler locks (issue 17: it answered 500 for busy and outage). */
export class TryDecrementCommand extends Command<Outcome> {
  constructor(readonly id: string) {
    super();
  }
}

@CommandHandler(TryDecrementCommand)
export class TryDecrementHandler implements ICommandHandler<TryDecrementCommand> {
  constructor(private readonly store: StockStore) {}

  @Locked('stock:{args.0.id}', { wait: 0 })
  async execute(command: TryDecrementCommand): Promise<Outcome> {
    return this.store.decrement(command.id);
  }
}
