// Prepended to `ts fragment`, `ts members` and `ts statements` examples (extract.js): the imports
// the docs leave out. Names an example defines itself shadow these.
/* eslint-disable @typescript-eslint/no-unused-vars */
import {
  Body,
  Catch,
  Controller,
  Get,
  HttpException,
  HttpStatus,
  Injectable,
  Logger,
  Module,
  Param,
  ParseIntPipe,
  Post,
  Put,
  Query,
  Res,
  Sse,
  StreamableFile,
  UseGuards,
  UseInterceptors,
  type ArgumentsHost,
  type ExceptionFilter,
} from '@nestjs/common';
import { Processor, WorkerHost } from '@nestjs/bullmq';
import { APP_FILTER, NestFactory } from '@nestjs/core';
import { RpcException } from '@nestjs/microservices';
import { Cron, CronExpression, Interval } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import type { Job } from 'bullmq';
import { Redis } from 'ioredis';
import request from 'supertest';
import {
  CurrentLock,
  defaultLockedErrorMapper,
  Locked,
  LockedInterceptor,
  LockLostError,
  LockNotAcquiredError,
  LockNotExtendedError,
  LockResourceError,
  Redlock,
  RedlockConfigError,
  RedlockError,
  RedlockModule,
  RedlockService,
  type Lock,
  type LockedContext,
  type LockOptions,
  type RedlockModuleOptions,
} from 'nestjs-redlock';
import { RedlockTesting, RedlockTestingModule } from 'nestjs-redlock/testing';
