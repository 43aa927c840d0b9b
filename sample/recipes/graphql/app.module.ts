import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Module } from '@nestjs/common';
import { GraphQLModule } from '@nestjs/graphql';
import { RedlockModule } from 'nestjs-redlock';
import { AccountResolver } from './account.resolver.js';

@Module({
  imports: [
    GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true }),
    RedlockModule.forRoot({
      nodes: (
        process.env.LOCK_NODES ??
        'redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003'
      ).split(','),
    }),
  ],
  providers: [AccountResolver],
})
export class AppModule {}
