import { ConflictException } from '@nestjs/common';

/**
 * A write carried a fencing token lower than the last one the stock level saw: its lock
 * holder was paused past its lease and another holder has written since. Nothing was written.
 */
export class StaleWriteException extends ConflictException {
  constructor(id: string) {
    super(`The lock on stock ${id} was lost before the write; nothing was written`);
  }
}
