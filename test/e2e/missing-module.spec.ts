import { Controller, Injectable, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Locked } from '../../lib';

/**
 * Forgetting RedlockModule (issue 25, friction 3): the first line of the bootstrap's error is the
 * library's, naming RedlockModule.forRoot and where it goes — the root module, or the class's own
 * module with isGlobal: false — not Nest's generic "can't resolve dependencies" with the fix
 * hidden in a Symbol. This file defines no RedlockModule at all (jest gives each file its own
 * globals), which is what lets @Locked know the module was forgotten.
 */

async function bootstrapError(metadata: { controllers?: unknown[]; providers?: unknown[] }) {
  try {
    const moduleRef = await Test.createTestingModule({
      controllers: (metadata.controllers ?? []) as never[],
      providers: (metadata.providers ?? []) as never[],
    }).compile();
    await moduleRef.close();
    return undefined;
  } catch (error) {
    return error;
  }
}

const FIRST_LINE =
  /^(\w+) needs RedlockModule \(it has @Locked methods\): import RedlockModule\.forRoot\(\{ nodes \}\) in your root module \(AppModule\) — or, registered with isGlobal: false, import it in the module that declares \1$/;

describe('without RedlockModule', () => {
  it('a @Locked provider: the first line names RedlockModule.forRoot and where to import it', async () => {
    @Injectable()
    class StockService {
      @Locked('x')
      async run() {}
    }
    const error = await bootstrapError({ providers: [StockService] });
    expect(String((error as Error).message).split('\n')[0]).toMatch(FIRST_LINE);
    expect((error as Error).message).toContain('StockService');
  });

  it('a @Locked controller too', async () => {
    @Controller('x')
    class StockController {
      @Post()
      @Locked('x')
      run() {}
    }
    const error = await bootstrapError({ controllers: [StockController] });
    expect(String((error as Error).message).split('\n')[0]).toMatch(FIRST_LINE);
  });
});
