// Generated from schemas/*.avsc by `pnpm exec tsx schemas/codegen.ts`. Do not edit: change the schemas and regenerate.
// Wire shapes as the codec decodes them: longs as numbers, bytes as Uint8Array, nullable fields as
// T | null, unions of variant records as unions discriminated on `type`.

export * from './Compaction.generated.js';
export * from './DeadLetter.generated.js';
export * from './MarkerEmitted.generated.js';
export * from './MarkerInvalid.generated.js';
export * from './MarkerRevocation.generated.js';
export * from './RegressionDetected.generated.js';
export * from './TurnEvent.generated.js';
