import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import {
  PARAMTYPES_METADATA,
  PROPERTY_DEPS_METADATA,
  SELF_DECLARED_DEPS_METADATA,
} from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import { RedlockConfigError } from './core';
import { assertLockTtl } from './core/options';
import { getLockedMetadata, type LockedMetadata } from './locked/locked-metadata';
import { isLockedWrapper, lockMethod, type AnyMethod } from './locked/locked-method';
import { REDLOCK_LOGGER_CONTEXT } from './redlock.constants';
import type { RedlockModuleOptions } from './redlock-module-options';
import { REDLOCK_MODULE_OPTIONS } from './redlock.module-definition';
import { RedlockService } from './redlock.service';

/**
 * Applies `@Locked` to provider methods (services, queue consumers, event listeners) at
 * bootstrap, in the manner of nestjs/schedule's explorer: every provider instance is scanned
 * (DiscoveryService + MetadataScanner) and each `@Locked` method is shadowed on the instance
 * by a locking wrapper. On the instance, not the prototype: two apps in one process each lock
 * through their own RedlockService, and the class itself stays untouched.
 *
 * - Controllers are not wrapped — `LockedInterceptor` locks their handlers — but their
 *   options are checked here too, against the module's (a `ttl` not above `nodeTimeout`).
 * - Request-scoped providers (and anything depending on one) have no instance at bootstrap
 *   and cannot be wrapped: a warning names each such method. Lock inside them with
 *   `RedlockService.using()`.
 * - Transient providers: every instance created at bootstrap is wrapped; instances created
 *   later for a request-scoped consumer are not, and a warning names them.
 *
 * Runs in `onModuleInit`: global modules (RedlockModule is global by default) initialise
 * first, so the wrappers are in place before other modules' explorers bind methods.
 */
@Injectable()
export class LockedExplorer implements OnModuleInit {
  private readonly logger = new Logger(REDLOCK_LOGGER_CONTEXT);

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly redlock: RedlockService,
    @Inject(REDLOCK_MODULE_OPTIONS) private readonly moduleOptions: RedlockModuleOptions,
  ) {}

  onModuleInit(): void {
    for (const wrapper of this.discovery.getControllers()) {
      for (const { metadata } of this.lockedMethods(wrapper.instance)) this.checkOptions(metadata);
    }
    const transientWithLocks = new Set<InstanceWrapper>();
    const providers = this.discovery.getProviders();
    for (const wrapper of providers) {
      if (wrapper.isAlias) continue; // the same instance is found under its own token
      const locked = this.lockedMethods(wrapper.instance);
      if (locked.length === 0) continue;
      for (const { metadata } of locked) this.checkOptions(metadata);
      if (!wrapper.isDependencyTreeStatic()) {
        for (const { name } of locked) this.warnNotWrapped(wrapper, name);
        continue;
      }
      const instances = new Set<unknown>([wrapper.instance]);
      if (wrapper.isTransient) {
        transientWithLocks.add(wrapper);
        for (const each of wrapper.getStaticTransientInstances()) instances.add(each?.instance);
      }
      for (const instance of instances) this.wrapInstance(instance);
    }
    if (transientWithLocks.size > 0) {
      this.warnLazyTransients(transientWithLocks, [
        ...providers,
        ...this.discovery.getControllers(),
      ]);
    }
  }

  /** The `@Locked` methods of an instance's class, with their metadata. */
  private lockedMethods(instance: unknown): { name: string; metadata: LockedMetadata }[] {
    if (typeof instance !== 'object' || instance === null) return [];
    const prototype = Object.getPrototypeOf(instance);
    if (prototype === null || prototype === Object.prototype) return [];
    const found: { name: string; metadata: LockedMetadata }[] = [];
    for (const name of this.scanner.getAllMethodNames(prototype)) {
      const metadata = getLockedMetadata(prototype[name]);
      if (metadata !== undefined) found.push({ name, metadata });
    }
    return found;
  }

  private wrapInstance(instance: unknown): void {
    if (typeof instance !== 'object' || instance === null) return;
    const target = instance as Record<string, unknown>;
    for (const { name, metadata } of this.lockedMethods(instance)) {
      const current = target[name];
      // Already wrapped (a value provider shared by two modules, a second RedlockModule).
      if (isLockedWrapper(current) || typeof current !== 'function') continue;
      const wrapped = lockMethod(
        current as AnyMethod,
        metadata,
        this.redlock,
        this.moduleOptions.mapLockedError,
      );
      // Fail closed: a method we cannot wrap would otherwise run without its lock.
      if (
        !Reflect.defineProperty(target, name, {
          value: wrapped,
          writable: true,
          configurable: true,
          enumerable: false,
        })
      ) {
        throw new RedlockConfigError(
          metadata.where,
          name,
          'cannot be applied: the provider instance is frozen or not extensible',
        );
      }
    }
  }

  /** What depends on the module's options cannot be checked when the decorator is applied. */
  private checkOptions(metadata: LockedMetadata): void {
    const { ttl } = metadata.lockOptions;
    if (ttl !== undefined) {
      assertLockTtl(ttl, this.redlock.redlock.options.nodeTimeout, `${metadata.where} options.ttl`);
    }
  }

  private warnNotWrapped(wrapper: InstanceWrapper, method: string): void {
    this.logger.warn(
      `@Locked on ${className(wrapper)}.${method} is not applied: the provider is request-scoped ` +
        '(or depends on a request-scoped provider), so it has no instance at bootstrap to wrap. ' +
        'Calls to it run WITHOUT the lock; lock inside the method with RedlockService.using(), ' +
        'or make the provider static.',
    );
  }

  /**
   * A static transient provider injected into a request-scoped consumer gets a new instance
   * per request, created after bootstrap and never wrapped: say so, naming both. Request-scoped
   * consumers are not resolved at bootstrap, so their declared dependencies are read instead.
   */
  private warnLazyTransients(
    transients: Set<InstanceWrapper>,
    consumers: readonly InstanceWrapper[],
  ): void {
    const byToken = new Map([...transients].map((t) => [t.token, t]));
    for (const consumer of consumers) {
      if (consumer.isDependencyTreeStatic()) continue;
      for (const token of new Set(declaredDependencies(consumer))) {
        const dependency = byToken.get(token as InstanceWrapper['token']);
        if (dependency === undefined) continue;
        for (const { name } of this.lockedMethods(dependency.instance)) {
          this.logger.warn(
            `@Locked on ${className(dependency)}.${name} is not applied in the instances created ` +
              `for request-scoped ${className(consumer)}: transient instances made per request ` +
              'are not wrapped, so calls through them run WITHOUT the lock.',
          );
        }
      }
    }
  }
}

/** The injection tokens a provider declares: factory `inject`, or constructor and property deps. */
function declaredDependencies(wrapper: InstanceWrapper): unknown[] {
  const unwrap = (dep: unknown): unknown => {
    if (typeof dep === 'object' && dep !== null) {
      const ref = dep as { forwardRef?: () => unknown; token?: unknown };
      if (typeof ref.forwardRef === 'function') return ref.forwardRef();
      if ('token' in ref) return ref.token;
    }
    return dep;
  };
  if (Array.isArray(wrapper.inject)) return wrapper.inject.map(unwrap);
  const metatype = wrapper.metatype;
  if (typeof metatype !== 'function') return [];
  const params: unknown[] = [...(Reflect.getMetadata(PARAMTYPES_METADATA, metatype) ?? [])];
  const declared: { index: number; param: unknown }[] =
    Reflect.getMetadata(SELF_DECLARED_DEPS_METADATA, metatype) ?? [];
  for (const { index, param } of declared) params[index] = param;
  const properties: { type: unknown }[] =
    Reflect.getMetadata(PROPERTY_DEPS_METADATA, metatype) ?? [];
  return [...params, ...properties.map((p) => p.type)].map(unwrap);
}

function className(wrapper: InstanceWrapper): string {
  const metatype = wrapper.metatype as { name?: string } | null | undefined;
  return metatype?.name || String(wrapper.name ?? wrapper.token);
}
