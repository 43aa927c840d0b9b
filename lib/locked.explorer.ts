import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { MODULE_PATH, PATH_METADATA } from '@nestjs/common/constants.js';
import { DiscoveryService, ModulesContainer } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { RedlockConfigError } from './core';
import { assertLockTtl } from './core/options';
import { getLockedMetadata, type LockedMetadata } from './locked/locked-metadata';
import { attachLockManager } from './locked/locked-method';
import { prepareLockedRoute } from './locked/locked-route';
import { LockedInterceptor } from './interceptors/locked.interceptor';
import type { ResourceTemplate, TemplateSource } from './locked/resource-template';
import type { RedlockModuleOptions } from './redlock-module-options';
import { REDLOCK_MODULE_OPTIONS } from './redlock.module-definition';
import { RedlockService } from './redlock.service';

/** A decorated method, as found on a prototype. */
type Method = (...args: never[]) => unknown;
/** A provider's or controller's class. */
type Class = abstract new (...args: never[]) => unknown;

/** Sources of the HTTP request: they exist only in an HTTP route handler. */
const HTTP_SOURCES: ReadonlySet<TemplateSource> = new Set([
  'params',
  'query',
  'body',
  'headers',
  'user',
]);

/**
 * Method metadata keys of the handlers Nest calls through the interceptor pipeline from a
 * provider (WebSocket gateways, GraphQL resolvers) or a controller (microservices). Written as
 * strings so that none of those packages is a dependency.
 */
const MESSAGE_HANDLER_KEYS = ['message', 'microservices:pattern'];
const RESOLVER_KEYS = ['graphql:resolver_type', 'graphql:resolver_name'];

/**
 * Checks every `@Locked` method Nest knows of at bootstrap, and fails the bootstrap with a
 * `RedlockConfigError` naming the method for what could never lock. The locking itself is not
 * done here: `@Locked` wraps the method on its class's prototype when it is applied, and each
 * instance gets its application's RedlockService by property injection — so request-scoped
 * and transient instances, lazily loaded modules, `super` calls and other libraries'
 * explorers (whatever their order) all go through the lock.
 *
 * Checked, for controllers and providers (request-scoped ones by their class):
 * - a `ttl` not above the module's `nodeTimeout`;
 * - templates against their source: a route parameter (`{id}`, `{params.id}`) must be a
 *   parameter of every path of the route; request placeholders need an HTTP route, `{data…}`
 *   a message handler;
 * - a provider method Nest does not call as a handler is declared `async` (or `async *`): a
 *   direct call cannot take a lock synchronously. Handlers (controller routes, message
 *   handlers, gateway and resolver methods) may be plain: Nest awaits what they return.
 *
 * Instances Nest did not construct (`useValue`, `useFactory`) are given the lock manager here.
 */
@Injectable()
export class LockedExplorer implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly modules: ModulesContainer,
    private readonly redlock: RedlockService,
    @Inject(REDLOCK_MODULE_OPTIONS) private readonly moduleOptions: RedlockModuleOptions,
  ) {}

  /**
   * Before Nest builds its routes (`RedlockModule.configure`, which Nest calls while it registers
   * the modules of an HTTP application): each `@Locked` route handler of a controller that the
   * method wrapper can hold alike locks without the interceptor (see `prepareLockedRoute`).
   */
  prepareRoutes(): void {
    for (const wrapper of this.discovery.getControllers()) {
      const type = classOf(wrapper);
      if (type === undefined) continue;
      for (const { owner, key } of lockedMethodsOf(type.prototype)) {
        prepareLockedRoute(type, owner, key, LockedInterceptor);
      }
    }
  }

  onModuleInit(): void {
    for (const wrapper of this.discovery.getControllers()) {
      const type = classOf(wrapper);
      for (const { method, metadata } of lockedMethodsOf(type?.prototype)) {
        this.checkOptions(metadata);
        checkSkipConsumer(type!, method, metadata);
        this.checkHandler(wrapper, type!, method, metadata);
      }
    }
    for (const wrapper of this.discovery.getProviders()) {
      if (wrapper.isAlias) continue; // the same instance is found under its own token
      const instance: unknown = wrapper.instance;
      const prototype =
        typeof instance === 'object' && instance !== null
          ? Object.getPrototypeOf(instance)
          : classOf(wrapper)?.prototype;
      const locked = lockedMethodsOf(prototype);
      if (locked.length === 0) continue;
      for (const { method, metadata } of locked) {
        this.checkOptions(metadata);
        checkSkipConsumer(prototype.constructor as Class, method, metadata);
        checkProviderMethod(method, metadata);
      }
      if (wrapper.isDependencyTreeStatic()) {
        const instances = [
          instance,
          ...(wrapper.getStaticTransientInstances() ?? []).map((each) => each?.instance),
        ];
        for (const each of instances) this.attach(each, locked[0].metadata);
      }
    }
  }

  /** What depends on the module's options cannot be checked when the decorator is applied. */
  private checkOptions(metadata: LockedMetadata): void {
    const { ttl } = metadata.lockOptions;
    if (ttl !== undefined) {
      assertLockTtl(
        ttl,
        this.redlock.redlock.options.nodeTimeout,
        `${metadata.where} options.ttl`,
        this.redlock.redlock.options.maxTtl,
      );
    }
  }

  private checkHandler(
    wrapper: InstanceWrapper,
    type: Class,
    method: Method,
    metadata: LockedMetadata,
  ): void {
    const methodPaths = asPaths(Reflect.getMetadata(PATH_METADATA, method));
    for (const template of metadata.templates) {
      for (const { source, path, label } of template.placeholders) {
        if (methodPaths === undefined) {
          if (HTTP_SOURCES.has(source)) {
            throw templateError(
              metadata,
              template,
              `${label} reads the HTTP request, but the method is not an HTTP route (no @Get/@Post…); use {data.…} or {args.N}`,
            );
          }
        } else if (source === 'data') {
          throw templateError(
            metadata,
            template,
            `${label} reads a message payload, but the method is an HTTP route; use {body.…}, or {args.N} with @Body()`,
          );
        } else if (source === 'params') {
          const routes = this.routesOf(wrapper, type, methodPaths);
          const missing = routes.filter((route) => !routeParams(route).includes(path[0]));
          if (missing.length > 0) {
            throw templateError(
              metadata,
              template,
              `{${label}} names no parameter of the route ${missing.map((r) => `"${r}"`).join(', ')} (its parameters: ${routeParams(missing[0]).join(', ') || 'none'})`,
            );
          }
        }
      }
    }
  }

  /** Every full path of a handler: module path (RouterModule) × controller paths × its own. */
  private routesOf(wrapper: InstanceWrapper, type: Class, methodPaths: string[]): string[] {
    const moduleType = wrapper.host?.metatype;
    const modulePath: unknown =
      moduleType === undefined || moduleType === null
        ? undefined
        : (Reflect.getMetadata(MODULE_PATH + this.modules.applicationId, moduleType) ??
          Reflect.getMetadata(MODULE_PATH, moduleType));
    const classPaths = asPaths(Reflect.getMetadata(PATH_METADATA, type)) ?? ['/'];
    const routes: string[] = [];
    for (const classPath of classPaths) {
      for (const methodPath of methodPaths) {
        routes.push(
          ['', typeof modulePath === 'string' ? modulePath : '', classPath, methodPath]
            .map((part) => part.replace(/^\/+|\/+$/g, ''))
            .filter((part) => part !== '')
            .join('/')
            .replace(/^/, '/'),
        );
      }
    }
    return routes;
  }

  /** Gives an instance Nest did not construct its lock manager. */
  private attach(instance: unknown, metadata: LockedMetadata): void {
    if (typeof instance !== 'object' || instance === null) return;
    if (!attachLockManager(instance, this.redlock, this.moduleOptions)) {
      throw new RedlockConfigError(
        metadata.where,
        'a frozen instance',
        'cannot be given its RedlockService: the provider instance is frozen or not extensible',
      );
    }
  }
}

/**
 * A provider method is locked by the wrapper when called directly, so it must be `async`,
 * unless Nest calls it as a message handler through the interceptor; its templates cannot read
 * an HTTP request, and read a payload only in a message handler.
 */
function checkProviderMethod(method: Method, metadata: LockedMetadata): void {
  const message = MESSAGE_HANDLER_KEYS.some((key) => Reflect.hasMetadata(key, method));
  const resolver = RESOLVER_KEYS.some((key) => Reflect.hasMetadata(key, method));
  const handler = message || resolver;
  for (const template of metadata.templates) {
    for (const { source, label } of template.placeholders) {
      if (HTTP_SOURCES.has(source)) {
        throw templateError(
          metadata,
          template,
          `{${label}} reads an HTTP request, but a provider method has none (a route parameter only exists on a controller route); name the lock from the method's arguments, e.g. {args.0}`,
        );
      }
      if (source === 'data' && !message) {
        throw templateError(
          metadata,
          template,
          resolver
            ? `{${label}} reads a message payload, but a GraphQL resolver has none; name the lock from its arguments, e.g. {args.0} for the first @Args()`
            : `{${label}} reads a message payload, but the method is not a message handler (@SubscribeMessage, @MessagePattern…); use {args.N}`,
        );
      }
    }
  }
  if (metadata.kind === 'sync' && !handler) {
    throw new RedlockConfigError(
      metadata.where,
      'a synchronous method',
      'cannot be locked: a lock is taken asynchronously, so a locked provider method cannot keep a synchronous return; declare it `async`',
    );
  }
}

/**
 * Queue consumers, by the metadata their decorators write (strings: none of these packages is a
 * dependency): a BullMQ `@Processor` class, a Bull `@Processor` class or `@Process` method, a
 * microservice `@EventPattern` handler (handler type 2: an event, acknowledged when the handler
 * returns).
 */
function queueConsumer(type: Class, method: Method): string | undefined {
  if (Reflect.hasMetadata('bullmq:processor_metadata', type)) return 'a BullMQ @Processor';
  if (
    Reflect.hasMetadata('bull:module_queue', type) ||
    Reflect.hasMetadata('bull:module_queue_process', method)
  ) {
    return 'a Bull @Processor';
  }
  if (Reflect.getMetadata('microservices:handler_type', method) === 2) {
    return 'an @EventPattern handler';
  }
  return undefined;
}

/**
 * `onBusy: 'skip'` on a queue consumer would complete a job (or acknowledge an event) that never
 * ran: the queue would count it done. Refused at bootstrap; `'throw'` fails the job instead, and
 * the queue retries it with its backoff (BullMQ `attempts`), which is the deferral users need.
 */
function checkSkipConsumer(type: Class, method: Method, metadata: LockedMetadata): void {
  if (metadata.onBusy !== 'skip') return;
  const consumer = queueConsumer(type, method);
  if (consumer === undefined) return;
  throw new RedlockConfigError(
    `${metadata.where} options.onBusy`,
    'skip',
    `would mark a job that never ran as done: the method is ${consumer}; use onBusy: 'throw' (the job fails while another owner holds the lock, and the queue retries it with its attempts/backoff)`,
  );
}

function templateError(
  metadata: LockedMetadata,
  template: ResourceTemplate,
  requirement: string,
): RedlockConfigError {
  return new RedlockConfigError(
    `${metadata.where} resource template`,
    template.template,
    requirement,
  );
}

/** The class of a provider or controller: its metatype unless that is a factory. */
function classOf(wrapper: InstanceWrapper): Class | undefined {
  const instance: unknown = wrapper.instance;
  if (typeof instance === 'object' && instance !== null) return instance.constructor as Class;
  const metatype = wrapper.metatype;
  // A factory provider's metatype is the factory, not a class.
  if (typeof metatype !== 'function' || wrapper.inject) return undefined;
  return metatype as Class;
}

/** A `@Locked` method, with the prototype that defines it and its name there. */
interface LockedMethod {
  method: Method;
  metadata: LockedMetadata;
  owner: object;
  key: string | symbol;
}

/** The `@Locked` methods of a prototype chain, symbol-named and inherited ones included. */
function lockedMethodsOf(prototype: object | null | undefined): LockedMethod[] {
  const found: LockedMethod[] = [];
  const seen = new Set<unknown>();
  for (let p = prototype; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const key of Reflect.ownKeys(p)) {
      if (key === 'constructor') continue;
      const value: unknown = Object.getOwnPropertyDescriptor(p, key)?.value;
      if (typeof value !== 'function' || seen.has(value)) continue;
      seen.add(value);
      const metadata = getLockedMetadata(value);
      if (metadata !== undefined) found.push({ method: value as Method, metadata, owner: p, key });
    }
  }
  return found;
}

function asPaths(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  return (Array.isArray(value) ? value : [value]).map(String);
}

/** The parameter names of a route path: `:id`, `:"quoted name"`, `*wildcard`. */
function routeParams(path: string): string[] {
  return [...path.matchAll(/[:*]("(?:[^"\\]|\\.)+"|[A-Za-z_$][\w$]*)/g)].map((match) =>
    match[1].startsWith('"') ? (JSON.parse(match[1]) as string) : match[1],
  );
}
