/**
 * A software WebAuthn authenticator for the API suites: what a browser and
 * a platform authenticator together hand the service, made with node:crypto
 * so that the service's verification (@simplewebauthn/server) runs for
 * real on real signatures. ES256 (P-256) keys, discoverable credentials,
 * "none" attestation (fmt "none", as browsers send by default), a
 * signature counter per credential, the client data a browser writes
 * (WebAuthn Level 3, "CollectedClientData") and the authenticator data
 * ("Authenticator Data": the RP ID's SHA-256, flags, counter, and for a
 * registration the attested credential data with its COSE key).
 *
 * Tests bend one thing at a time through the options of `register` and
 * `assert` (another challenge, another origin, a counter set back) to
 * see the service refuse it.
 */
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';

/** The JSON a browser's WebAuthn options carry, as far as an authenticator reads them. */
interface CreationOptions {
  challenge: string;
  rp: { id?: string; name: string };
  user: { id: string; name: string };
}
interface RequestOptions {
  challenge: string;
  rpId?: string;
  allowCredentials?: Array<{ id: string }>;
}

export interface SoftCredential {
  id: string;
  rpId: string;
  /** The user handle the options gave, base64url. */
  userHandle: string;
  privateKey: KeyObject;
  counter: number;
}

/** Minimal CBOR (RFC 8949) for what attestation objects and COSE keys hold: integers, byte and text strings, maps. */
function cbor(value: unknown): Buffer {
  const head = (major: number, n: number): Buffer => {
    if (n < 24) return Buffer.from([(major << 5) | n]);
    if (n < 256) return Buffer.from([(major << 5) | 24, n]);
    if (n < 65536) return Buffer.from([(major << 5) | 25, n >> 8, n & 255]);
    const b = Buffer.alloc(5);
    b[0] = (major << 5) | 26;
    b.writeUInt32BE(n, 1);
    return b;
  };
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (Buffer.isBuffer(value)) return Buffer.concat([head(2, value.length), value]);
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'utf8');
    return Buffer.concat([head(3, bytes.length), bytes]);
  }
  if (value instanceof Map) {
    const parts = [head(5, value.size)];
    for (const [k, v] of value) parts.push(cbor(k), cbor(v));
    return Buffer.concat(parts);
  }
  throw new Error(`cbor: cannot encode ${typeof value}`);
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest();
const b64url = (data: Buffer) => data.toString('base64url');

const FLAG_UP = 0x01;
const FLAG_UV = 0x04;
const FLAG_AT = 0x40;

function counterBytes(counter: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(counter);
  return b;
}

export class SoftwareAuthenticator {
  readonly credentials: SoftCredential[] = [];

  constructor(
    /** The origin the "browser" is at (the client data's `origin`). */
    private readonly origin: string,
    /** Whether it verifies its user (a PIN, a fingerprint): the UV flag. */
    private readonly userVerified = true,
  ) {}

  private clientData(type: 'webauthn.create' | 'webauthn.get', challenge: string, origin: string): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }), 'utf8');
  }

  /** Makes a credential for the options (`navigator.credentials.create`), and the answer the service verifies. */
  register(options: CreationOptions, bend: { challenge?: string; origin?: string } = {}) {
    const rpId = options.rp.id ?? new URL(this.origin).hostname;
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' });
    const coseKey = cbor(
      new Map<number, unknown>([
        [1, 2], // kty: EC2
        [3, -7], // alg: ES256
        [-1, 1], // crv: P-256
        [-2, Buffer.from(jwk.x!, 'base64url')],
        [-3, Buffer.from(jwk.y!, 'base64url')],
      ]),
    );
    const id = randomBytes(16);
    const credential: SoftCredential = { id: b64url(id), rpId, userHandle: options.user.id, privateKey, counter: 0 };
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(id.length);
    const authData = Buffer.concat([
      sha256(rpId),
      Buffer.from([FLAG_UP | FLAG_AT | (this.userVerified ? FLAG_UV : 0)]),
      counterBytes(credential.counter),
      Buffer.alloc(16), // AAGUID: none
      idLength,
      id,
      coseKey,
    ]);
    const attestationObject = cbor(
      new Map<string, unknown>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]),
    );
    this.credentials.push(credential);
    return {
      credential,
      response: {
        id: credential.id,
        rawId: credential.id,
        type: 'public-key',
        response: {
          clientDataJSON: b64url(this.clientData('webauthn.create', bend.challenge ?? options.challenge, bend.origin ?? this.origin)),
          attestationObject: b64url(attestationObject),
          transports: ['internal'],
        },
        clientExtensionResults: {},
        authenticatorAttachment: 'platform',
      },
    };
  }

  /**
   * Signs the options' challenge with a credential (`navigator.credentials.get`):
   * one the options allow, else any of this RP's (a discoverable credential).
   * `counter` sets the counter sent (as a cloned authenticator's would be).
   */
  assert(options: RequestOptions, bend: { credential?: SoftCredential; challenge?: string; origin?: string; counter?: number } = {}) {
    const rpId = options.rpId ?? new URL(this.origin).hostname;
    const allowed = options.allowCredentials?.map((c) => c.id);
    const credential = bend.credential ?? this.credentials.find((c) => c.rpId === rpId && (!allowed?.length || allowed.includes(c.id)));
    if (!credential) throw new Error('the software authenticator holds no credential these options allow');
    credential.counter = bend.counter ?? credential.counter + 1;
    const authData = Buffer.concat([
      sha256(rpId),
      Buffer.from([FLAG_UP | (this.userVerified ? FLAG_UV : 0)]),
      counterBytes(credential.counter),
    ]);
    const clientDataJSON = this.clientData('webauthn.get', bend.challenge ?? options.challenge, bend.origin ?? this.origin);
    // ES256: ECDSA over the authenticator data and the client data's hash, DER-encoded (WebAuthn, "Assertion signature").
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientDataJSON)]), credential.privateKey);
    return {
      id: credential.id,
      rawId: credential.id,
      type: 'public-key',
      response: {
        clientDataJSON: b64url(clientDataJSON),
        authenticatorData: b64url(authData),
        signature: b64url(signature),
        userHandle: credential.userHandle,
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }
}
