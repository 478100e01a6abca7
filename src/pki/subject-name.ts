/**
 * Edits an X.501 subject Name at the ASN.1 level. Upstream takes an issued certificate's subject from the
 * CSR but forces the common name to the entity's id for some uses (transit routers; identity
 * certificates in this project), so we need "this subject, with CN = x". Editing the decoded structure
 * keeps every other attribute and its string type exactly as the requester encoded it.
 */
import * as asn1js from 'asn1js';

const COMMON_NAME_OID = '2.5.4.3';

/**
 * `subjectDer` with every CN value replaced by `commonName` (UTF8String), or with a CN RDN appended when
 * the subject has none. Throws when `subjectDer` is not a DER Name.
 */
export function withCommonName(subjectDer: Uint8Array, commonName: string): Uint8Array<ArrayBuffer> {
  const rdnSequence = decodeName(subjectDer);
  let replaced = false;
  for (const rdn of rdnSequence.valueBlock.value) {
    for (const attribute of (rdn as asn1js.Set).valueBlock.value) {
      const parts = (attribute as asn1js.Sequence).valueBlock.value;
      if ((parts[0] as asn1js.ObjectIdentifier).valueBlock.toString() === COMMON_NAME_OID) {
        parts[1] = new asn1js.Utf8String({ value: commonName });
        replaced = true;
      }
    }
  }
  if (!replaced) rdnSequence.valueBlock.value.push(commonNameRdn(commonName));
  return new Uint8Array(rdnSequence.toBER());
}

/** True when the Name holds no attribute at all (RFC 5280 then requires a critical SAN extension). */
export function isEmptyName(subjectDer: Uint8Array): boolean {
  return decodeName(subjectDer).valueBlock.value.length === 0;
}

function decodeName(der: Uint8Array): asn1js.Sequence {
  const decoded = asn1js.fromBER(der);
  if (decoded.offset === -1 || !(decoded.result instanceof asn1js.Sequence)) {
    throw new Error('subject is not a DER-encoded Name');
  }
  for (const rdn of decoded.result.valueBlock.value) {
    if (!(rdn instanceof asn1js.Set) || !rdn.valueBlock.value.every(isAttributeTypeAndValue)) {
      throw new Error('subject is not a DER-encoded Name');
    }
  }
  return decoded.result;
}

function isAttributeTypeAndValue(node: asn1js.AsnType): boolean {
  return (
    node instanceof asn1js.Sequence &&
    node.valueBlock.value.length === 2 &&
    node.valueBlock.value[0] instanceof asn1js.ObjectIdentifier
  );
}

function commonNameRdn(commonName: string): asn1js.Set {
  return new asn1js.Set({
    value: [
      new asn1js.Sequence({
        value: [new asn1js.ObjectIdentifier({ value: COMMON_NAME_OID }), new asn1js.Utf8String({ value: commonName })],
      }),
    ],
  });
}
