import { BadRequestException, Injectable, type PipeTransform } from '@nestjs/common';

/**
 * Validates a quantity from the request body: a whole number of units, at least `min`. The
 * sample has no class-validator; this is the one field it needs checked.
 *
 * @example
 * set(@Param('id') id: string, @Body('quantity', new ParseQuantityPipe()) quantity: number)
 */
@Injectable()
export class ParseQuantityPipe implements PipeTransform<unknown, number> {
  /** @param min the smallest accepted quantity. @default 0 */
  constructor(private readonly min = 0) {}

  transform(value: unknown): number {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < this.min) {
      throw new BadRequestException(`quantity must be a whole number ≥ ${this.min}`);
    }
    return value;
  }
}
