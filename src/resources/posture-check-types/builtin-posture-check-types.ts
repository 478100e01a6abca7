/**
 * The posture check types every controller has (upstream model §3.11, auth §5.1), stored in the order the
 * read model shows them: operating systems in byte order of their name, versions sorted as strings, and
 * an empty version list as null. There is no MFA type record, although MFA checks exist.
 */
export interface BuiltinPostureCheckType {
  id: string;
  name: string;
  operatingSystems: Array<{ type: string; versions: string[] | null }>;
}

function byteSorted(values: string[]): string[] {
  return [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

function os(entries: Record<string, string[]>): BuiltinPostureCheckType['operatingSystems'] {
  return byteSorted(Object.keys(entries)).map((type) => {
    const versions = byteSorted(entries[type]!);
    return { type, versions: versions.length ? versions : null };
  });
}

const windows = ['Vista', '7', '8', '10', '2000'];
const linux = ['4.14', '4.19', '5.4', '5.9'];
const macOs = ['10.15', '11.0'];

export const builtinPostureCheckTypes: BuiltinPostureCheckType[] = [
  {
    id: 'OS',
    name: 'Operating System Check',
    operatingSystems: os({ Windows: windows, Linux: linux, Android: ['9', '10', '11'], macOS: macOs, iOS: ['11', '12'] }),
  },
  { id: 'PROCESS', name: 'Process Check', operatingSystems: os({ Windows: windows, macOS: macOs, Linux: linux }) },
  { id: 'DOMAIN', name: 'Windows Domain Check', operatingSystems: os({ Windows: windows }) },
  { id: 'MAC', name: 'MAC Address Check', operatingSystems: os({ Windows: windows, Linux: linux, macOS: macOs, Android: ['9', '10', '11'] }) },
  { id: 'PROCESS_MULTI', name: 'Process Multi Check', operatingSystems: os({ Windows: [], macOS: [], Linux: [] }) },
];
