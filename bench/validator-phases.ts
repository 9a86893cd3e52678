// Where the validation latency goes, read from the validators' own Prometheus metrics at the end of a
// Tidemark leg (every instance's summed): how many batches, how many compactions each, and the mean of
// each phase of a batch (services/validator's tidemark_validator_batch_phase_seconds), plus how often a
// batch found its boundaries covered at once. A decision's latency is about queued + load + decide + the
// record and publish part of commit.

const phases = ['queued', 'load', 'decide', 'commit'] as const;

/** The sum of a metric's samples whose name (with labels) is exactly `series`, over the texts. */
function total(texts: readonly string[], series: string): number {
  let sum = 0;
  for (const text of texts) {
    for (const line of text.split('\n')) {
      const space = line.lastIndexOf(' ');
      if (space > 0 && line.slice(0, space) === series) sum += Number(line.slice(space + 1));
    }
  }
  return sum;
}

/** The lines to print, or none when no validator's metrics were read (or it decided no batch). */
export function validatorPhaseLines(texts: readonly string[]): string[] {
  const metric = 'tidemark_validator_batch_phase_seconds';
  const batches = total(texts, `${metric}_count{phase="commit"}`);
  if (batches === 0) return [];
  const compactions = total(texts, 'tidemark_validator_compactions_total');
  const means = phases.map((phase) => {
    const count = total(texts, `${metric}_count{phase="${phase}"}`);
    const ms = count === 0 ? 0 : (total(texts, `${metric}_sum{phase="${phase}"}`) / count) * 1000;
    return `${phase} ${ms.toFixed(1)}`;
  });
  const immediate = total(texts, 'tidemark_validator_watermark_waits_total{result="immediate"}');
  const waited = ['ok', 'timeout', 'broken', 'rebuilding']
    .map((result) => total(texts, `tidemark_validator_watermark_waits_total{result="${result}"}`))
    .reduce((a, b) => a + b, 0);
  return [
    `validator batches: ${batches} (${(compactions / batches).toFixed(1)} compactions each); mean ms per batch: ${means.join(', ')}; watermark covered at once ${immediate}, waited for ${waited}`,
  ];
}
