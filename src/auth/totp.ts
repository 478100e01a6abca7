/**
 * TOTP parameters of MFA (auth.md §4.2, §4.3): a 10-byte secret in unpadded base32 (16 characters), the
 * `otpauth://` provisioning URL with the `openziti.io` issuer and the identity name as label (not
 * percent-escaped, no algorithm/digits/period parameters: SHA-1, 6 digits, 30 s), codes accepted within
 * ±2 time steps, 20 single-use recovery codes of 6 base32 characters, and the 256×256 PNG QR code of the
 * provisioning URL (error correction M). TOTP arithmetic is the otpauth library's; PNG encoding is qrcode's.
 */
import { Secret, TOTP } from 'otpauth';
import QRCode from 'qrcode';

export const TOTP_ISSUER = 'openziti.io';
export const RECOVERY_CODE_COUNT = 20;
/** Accepted time steps either side of now. */
const WINDOW = 2;

export function newTotpSecret(): string {
  return new Secret({ size: 10 }).base32;
}

export function provisioningUrl(identityName: string, secret: string): string {
  const query = new URLSearchParams([
    ['issuer', TOTP_ISSUER],
    ['secret', secret],
  ]);
  return `otpauth://totp/${TOTP_ISSUER}:${identityName}?${query.toString()}`;
}

/** A TOTP code: exactly six characters, a digit first, parsing as an integer; then valid within the window. */
export function isValidTotp(secret: string, code: string, now: Date): boolean {
  if (code.length !== 6 || !/^[0-9]/.test(code) || !/^[0-9]+$/.test(code)) return false;
  const totp = new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 });
  return totp.validate({ token: code, timestamp: now.getTime(), window: WINDOW }) !== null;
}

export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => new Secret({ size: 8 }).base32.replace(/=/g, '').slice(0, 6));
}

export function qrCodePng(text: string): Promise<Buffer> {
  // The renderer floors width × (modules + margins) / (modules + margins); a hair over 256 keeps that at 256.
  return QRCode.toBuffer(text, { type: 'png', errorCorrectionLevel: 'M', width: 256.001, margin: 4 });
}
