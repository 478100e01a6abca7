/**
 * The first exchange on a router's control connection: the router's hello (content type 0, sequence -1, body =
 * router id) and the controller's result. What the result must carry is fixed by what upstream routers check
 * before they bind: header 1 = -1, success, a group secret (the router's own echoed back on a re-dial), a
 * five-field version and a capability mask with JWT legacy sessions. This module decides and renders; the
 * listener does the I/O.
 */
import { randomBytes } from 'node:crypto';
import {
  ChannelContentType,
  ChannelHeader,
  asReplyTo,
  boolValue,
  message,
  readBool,
  readString,
  stringValue,
  type ChannelMessage,
} from './message.ts';

/** Capability bits a controller announces (bit N of a big-endian integer). */
export const ControllerCapability = {
  CreateTerminatorV2: 1,
  SingleRouterLinkSource: 2,
  CreateCircuitV2: 3,
  RouterDataModel: 4,
  GroupedCtrlChan: 5,
  SupportsJWTLegacySessions: 6,
} as const;

/** Header ids the hello uses beside the channel's own. */
export const HelloHeader = {
  RouterCapabilities: 1002,
  LegacyCapabilities: 12,
  Listeners: 1000,
} as const;

/**
 * The capabilities announced: everything but grouped control channels, so a router keeps one TCP connection
 * (bit 5 would make it dial a second, high-priority one).
 */
export function controllerCapabilities(): Buffer {
  let mask = 0;
  for (const bit of [1, 2, 3, 4, 6]) mask |= 1 << bit;
  return Buffer.from([mask]);
}

export interface VersionInfo {
  version: string;
  revision: string;
  buildDate: string;
  os: string;
  arch: string;
}

/** A version header: exactly five `|`-separated fields, as upstream writes and reads it. */
export function parseVersionHeader(value: string | undefined): VersionInfo | undefined {
  if (value === undefined) return undefined;
  const parts = value.split('|');
  if (parts.length !== 5) return undefined;
  const [version, revision, buildDate, os, arch] = parts as [string, string, string, string, string];
  return { version, revision, buildDate, os, arch };
}

export function versionHeader(info: VersionInfo): string {
  return [info.version, info.revision, info.buildDate, info.os, info.arch].join('|');
}

export interface RouterHello {
  routerId: string;
  versionInfo: VersionInfo;
  /** The group secret of a re-dial, to be echoed unchanged. */
  groupSecret?: Buffer;
  isGrouped: boolean;
  underlayType: string;
}

/** Reads a router's hello; a string saying what is wrong when it is not one a router would send. */
export function readRouterHello(hello: ChannelMessage): RouterHello | string {
  if (hello.contentType !== ChannelContentType.Hello) return `expected a hello, got content type ${hello.contentType}`;
  if (hello.sequence !== -1) return 'the hello must have sequence -1';
  const routerId = hello.body.toString('utf8');
  if (!routerId) return 'the hello names no router';
  const versionInfo = parseVersionHeader(readString(hello.headers.get(ChannelHeader.HelloVersion)));
  if (!versionInfo) return 'no valid version header provided';
  const secret = hello.headers.get(ChannelHeader.GroupSecret);
  return {
    routerId,
    versionInfo,
    ...(secret && secret.length > 0 ? { groupSecret: secret } : {}),
    isGrouped: readBool(hello.headers.get(ChannelHeader.IsGrouped)) === true,
    underlayType: readString(hello.headers.get(ChannelHeader.Type)) ?? 'ctrl.default',
  };
}

export interface HelloAcceptance {
  controllerId: string;
  controllerVersion: VersionInfo;
  /** Identifies this connection (the router uses it as its channel group id). */
  connectionId: string;
}

/** The result that lets a router bind: success and every header it checks. */
export function helloAccepted(hello: ChannelMessage, router: RouterHello, accept: HelloAcceptance): ChannelMessage {
  const caps = controllerCapabilities();
  const reply = message(ChannelContentType.Result, '', [
    [ChannelHeader.ResultSuccess, boolValue(true)],
    [ChannelHeader.ConnectionId, stringValue(accept.connectionId)],
    [ChannelHeader.Id, stringValue(accept.controllerId)],
    [ChannelHeader.HelloVersion, stringValue(versionHeader(accept.controllerVersion))],
    [HelloHeader.RouterCapabilities, caps],
    [HelloHeader.LegacyCapabilities, caps],
    [ChannelHeader.GroupSecret, router.groupSecret ?? randomBytes(16)],
    [ChannelHeader.Type, stringValue(router.underlayType)],
  ]);
  if (router.isGrouped) reply.headers.set(ChannelHeader.IsGrouped, boolValue(true));
  reply.sequence = -1;
  return asReplyTo(hello, reply);
}

/** The result that turns a router away: the router logs the reason and retries later. */
export function helloRefused(hello: ChannelMessage, reason: string): ChannelMessage {
  const reply = message(ChannelContentType.Result, reason, [[ChannelHeader.ResultSuccess, boolValue(false)]]);
  reply.sequence = -1;
  return asReplyTo(hello, reply);
}

export interface EnrolledRouter {
  /** SHA-1 of the enrolled certificate's DER, lower-case hex (none until the router enrolled). */
  fingerprint: string | null;
  disabled: boolean;
}

/**
 * Whether the router named by the hello may connect with the certificate it presented (already verified to
 * chain to this network's CA): it must exist, be enrolled with exactly that certificate, and not be disabled.
 * Upstream v2.0.0-pre3 skipped the fingerprint comparison (advisory GHSA-cc5m-7mhm-xh9f); it is required here.
 * Answers the refusal reason, or undefined when the router is admitted.
 */
export function routerRefusal(routerId: string, presentedFingerprint: string, enrolled: EnrolledRouter | undefined): string | undefined {
  if (!enrolled) return `unknown router ${routerId}`;
  if (!enrolled.fingerprint) return `router ${routerId} is not enrolled`;
  if (enrolled.fingerprint.toLowerCase() !== presentedFingerprint.toLowerCase()) return `router ${routerId} presented a certificate it is not enrolled with`;
  if (enrolled.disabled) return `router ${routerId} is disabled`;
  return undefined;
}
