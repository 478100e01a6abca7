/**
 * The OS posture check's version grammar: strict semantic versions, precedence (pre-releases first, build
 * metadata ignored), comparators joined by spaces, `||` alternatives, `x` wildcards, and what does not parse.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compareVersions, parseRange, parseVersion, satisfies } from '../../../src/posture/semver-range.ts';

describe('parseVersion', () => {
  it('accepts MAJOR.MINOR.PATCH with pre-release and build parts only', () => {
    assert.deepEqual(parseVersion('10.0.19041'), { major: 10, minor: 0, patch: 19041, pre: [] });
    assert.deepEqual(parseVersion('1.2.3-rc.1+build.5'), { major: 1, minor: 2, patch: 3, pre: ['rc', 1] });
    for (const bad of ['10.0', '1', '1.2.3.4', '01.2.3', '1.2.x', 'v1.2.3', '1.2.3-', '1.2.3-01', '1.2.3+', '', 'a.b.c']) {
      assert.equal(parseVersion(bad), undefined, bad);
    }
  });

  it('orders by semver precedence', () => {
    const order = ['1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-beta', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0', '1.0.1', '1.1.0', '2.0.0'];
    for (let i = 1; i < order.length; i++) assert.equal(compareVersions(parseVersion(order[i - 1]!)!, parseVersion(order[i]!)!), -1, order[i]);
    assert.equal(compareVersions(parseVersion('1.0.0+a')!, parseVersion('1.0.0+b')!), 0);
  });
});

describe('ranges', () => {
  const cases: Array<[string, string, boolean]> = [
    ['>=10.0.19041 <11.0.0', '10.0.19041', true],
    ['>=10.0.19041 <11.0.0', '11.0.0', false],
    ['>= 10.0.0  < 11.0.0', '10.5.0', true],
    ['>1.0.0 <=2.0.0', '2.0.0', true],
    ['>1.0.0', '1.0.0', false],
    ['1.2.3', '1.2.3', true],
    ['=1.2.3', '1.2.4', false],
    ['==1.2.3', '1.2.3', true],
    ['!=1.2.3', '1.2.3', false],
    ['!1.2.3', '1.2.4', true],
    ['<1.0.0 || >=3.0.0', '2.0.0', false],
    ['<1.0.0 || >=3.0.0', '3.1.0', true],
    ['1.x', '1.9.9', true],
    ['1.x', '2.0.0', false],
    ['1.2.x', '1.2.7', true],
    ['1.2.x', '1.3.0', false],
    ['>1.x', '2.0.0', true],
    ['>1.x', '1.9.0', false],
    ['>=1.x', '1.0.0', true],
    ['<1.x', '0.9.0', true],
    ['<=1.x', '1.9.0', true],
    ['<=1.x', '2.0.0', false],
    ['!=1.x', '1.5.0', false],
    ['!=1.x', '2.5.0', true],
    ['>=1.0.0', '1.0.0-rc.1', false],
  ];
  for (const [range, version, expected] of cases) {
    it(`${version} ${expected ? 'is' : 'is not'} in "${range}"`, () => assert.equal(satisfies(version, range), expected));
  }

  it('rejects what does not parse', () => {
    for (const bad of ['', '>=', '1.0', '>=1.0.0 ||', 'abc', '>=1.0.0 <2', '~1.2.3', '^1.2.3', '1.0.0 - 2.0.0']) assert.equal(parseRange(bad), undefined, bad);
    assert.equal(satisfies('1.0.0', 'nonsense'), false);
    assert.equal(satisfies('1.0', '>=0.0.0'), false);
  });
});
