import { roles, startRole, type Role, type ShapeDeployment } from './shape.js';

// One group of the same shape in a process of its own (`shapeLeg` in mode `processes` spawns one per
// role, as the services run in production). The parent passes the role and the deployment in the
// environment and talks over the IPC channel: `joined` once every consumer joined its group, `done`
// (resume) once every expected record was handled. SIGTERM or a lost parent stops it.

const role = process.env.SHAPE_ROLE as Role | undefined;
const deployment = process.env.SHAPE_DEPLOYMENT;
const send = process.send?.bind(process);
if (role === undefined || !roles.includes(role) || deployment === undefined || send === undefined) {
  process.stderr.write(
    'bench/shape-group.ts: spawned by bench/shape-leg.ts only (SHAPE_ROLE, SHAPE_DEPLOYMENT, IPC)\n',
  );
  process.exit(2);
}
const running = await startRole(role, JSON.parse(deployment) as ShapeDeployment, () =>
  send({ type: 'done' }),
);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await running.stop();
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('disconnect', () => void stop());
running.crashed.catch((error: unknown) => {
  process.stderr.write(`bench/shape-group.ts (${role}): ${String(error)}\n`);
  process.exit(1);
});
await running.joined;
send({ type: 'joined' });
