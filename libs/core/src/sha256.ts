// SHA-256 (FIPS 180-4) in plain TypeScript: the core is pure and cannot reach for node:crypto.

const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);

const utf8 = new TextEncoder();

// Contexts hashed at resume time reach hundreds of kilobytes, so the compression loop is written for
// speed: whole blocks are read straight from the input (only the tail is copied for padding), words are
// assembled with shifts rather than DataView calls, and the state lives in locals with `| 0` arithmetic.

/** The SHA-256 digest of bytes, or of a string's UTF-8 encoding. */
export function sha256(input: Uint8Array | string): Uint8Array {
  const bytes = typeof input === 'string' ? utf8.encode(input) : input;
  const state = new Int32Array([
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]);
  const w = new Int32Array(64);
  const whole = bytes.length - (bytes.length % 64);
  compress(state, w, bytes, 0, whole);

  // Pad the tail: a 1 bit, zeros, then the message length in bits as a 64-bit big-endian integer.
  const tail = new Uint8Array(bytes.length - whole + 9 > 64 ? 128 : 64);
  tail.set(bytes.subarray(whole));
  tail[bytes.length - whole] = 0x80;
  const bits = bytes.length * 8;
  const high = Math.floor(bits / 0x1_0000_0000);
  const end = tail.length;
  tail[end - 8] = high >>> 24;
  tail[end - 7] = high >>> 16;
  tail[end - 6] = high >>> 8;
  tail[end - 5] = high;
  tail[end - 4] = bits >>> 24;
  tail[end - 3] = bits >>> 16;
  tail[end - 2] = bits >>> 8;
  tail[end - 1] = bits;
  compress(state, w, tail, 0, end);

  const out = new Uint8Array(32);
  for (let i = 0; i < 8; i++) {
    const word = state[i]!;
    out[i * 4] = word >>> 24;
    out[i * 4 + 1] = word >>> 16;
    out[i * 4 + 2] = word >>> 8;
    out[i * 4 + 3] = word;
  }
  return out;
}

/** Runs the compression function over the 64-byte blocks of data[from, to). */
function compress(state: Int32Array, w: Int32Array, data: Uint8Array, from: number, to: number): void {
  let h0 = state[0]!;
  let h1 = state[1]!;
  let h2 = state[2]!;
  let h3 = state[3]!;
  let h4 = state[4]!;
  let h5 = state[5]!;
  let h6 = state[6]!;
  let h7 = state[7]!;
  for (let offset = from; offset < to; offset += 64) {
    for (let t = 0; t < 16; t++) {
      const i = offset + t * 4;
      w[t] = (data[i]! << 24) | (data[i + 1]! << 16) | (data[i + 2]! << 8) | data[i + 3]!;
    }
    for (let t = 16; t < 64; t++) {
      const w15 = w[t - 15]!;
      const w2 = w[t - 2]!;
      const s0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3);
      const s1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10);
      w[t] = (w[t - 16]! + s0 + w[t - 7]! + s1) | 0;
    }
    let a = h0;
    let b = h1;
    let c = h2;
    let d = h3;
    let e = h4;
    let f = h5;
    let g = h6;
    let h = h7;
    for (let t = 0; t < 64; t++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[t]! + w[t]!) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
    h5 = (h5 + f) | 0;
    h6 = (h6 + g) | 0;
    h7 = (h7 + h) | 0;
  }
  state[0] = h0;
  state[1] = h1;
  state[2] = h2;
  state[3] = h3;
  state[4] = h4;
  state[5] = h5;
  state[6] = h6;
  state[7] = h7;
}

const hexDigits = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/** The SHA-256 digest as 64 lowercase hex digits. */
export function sha256Hex(input: Uint8Array | string): string {
  let hex = '';
  for (const byte of sha256(input)) hex += hexDigits[byte]!;
  return hex;
}
