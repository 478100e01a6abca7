/**
 * The outbound address rule for JWKS endpoints: link-local and cloud metadata addresses are refused in every
 * spelling the URL parser accepts; loopback, private and public addresses and host names are allowed.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isRefusedAddress, jwksEndpointProblem } from '../../../src/resources/external-jwt-signers/outbound-address.ts';

describe('isRefusedAddress', () => {
  const refused = [
    '169.254.169.254', '169.254.0.1', '169.254.255.255', '100.100.100.200',
    'fe80::1', 'febf:ffff::1', 'fd00:ec2::254', 'FD00:EC2:0:0:0:0:0:254',
    '::ffff:169.254.169.254', '::ffff:a9fe:a9fe', '::ffff:100.100.100.200',
  ];
  for (const address of refused) it(`error/${address} is refused`, () => assert.equal(isRefusedAddress(address), true));

  const allowed = [
    '127.0.0.1', '10.0.0.5', '172.16.1.1', '192.168.1.10', '8.8.8.8', '169.253.255.255', '169.255.0.0',
    '::1', 'fc00::1', 'fd00:ec2::253', 'fec0::1', '2001:db8::1', '::ffff:127.0.0.1', 'localhost', 'idp.example.com',
  ];
  for (const address of allowed) it(`ok/${address} is allowed`, () => assert.equal(isRefusedAddress(address), false));
});

describe('jwksEndpointProblem', () => {
  const refused: Array<[string, RegExp]> = [
    ['http://169.254.169.254/latest/meta-data/', /link-local or cloud metadata/],
    ['https://169.254.169.254:8443/jwks', /link-local or cloud metadata/],
    ['http://0xa9.0xfe.0xa9.0xfe/', /link-local or cloud metadata/],
    ['http://2852039166/', /link-local or cloud metadata/],
    ['http://0251.254.169.254/', /link-local or cloud metadata/],
    ['http://169.254.43518/', /link-local or cloud metadata/],
    ['http://[::ffff:169.254.169.254]/', /link-local or cloud metadata/],
    ['http://[::ffff:a9fe:a9fe]/', /link-local or cloud metadata/],
    ['http://[fe80::1]/jwks', /link-local or cloud metadata/],
    ['http://[FD00:EC2::254]/', /link-local or cloud metadata/],
    ['ftp://idp.example.com/jwks', /http or https URL/],
    ['file:///etc/passwd', /http or https URL/],
    ['gopher://127.0.0.1:6379/', /http or https URL/],
    ['idp.example.com/jwks', /http or https URL/],
    ['not a url', /http or https URL/],
  ];
  for (const [url, reason] of refused) it(`error/${url}`, () => assert.match(jwksEndpointProblem(url) ?? '', reason));

  const allowed = [
    'https://idp.example.com/.well-known/jwks.json',
    'http://127.0.0.1:8080/jwks',
    'http://localhost/jwks',
    'http://10.1.2.3/jwks',
    'http://192.168.0.10/jwks',
    'https://[::1]:8443/jwks',
    'http://[fd12:3456::1]/jwks',
  ];
  for (const url of allowed) it(`ok/${url}`, () => assert.equal(jwksEndpointProblem(url), undefined));
});
