// run.mjs is what every client script of the interop tests shares: one JSON
// summary printed on stdout at the end (exit status 1 when any expectation
// failed), the steps it went through, and a watchdog that ends a run that
// hangs and says in which step.

// run returns the helpers of one scripted run writing into summary, which
// gets ok, steps and failures.
export function run(summary, deadlineMs) {
  summary.ok = false;
  summary.steps ??= [];
  summary.failures ??= [];
  const fail = (msg) => summary.failures.push(msg);
  const finish = () => {
    summary.ok = summary.failures.length === 0;
    process.stdout.write(JSON.stringify(summary) + '\n');
    process.exit(summary.ok ? 0 : 1);
  };
  setTimeout(() => {
    fail(`deadline of ${deadlineMs} ms passed during step "${summary.steps.at(-1) ?? 'start'}"`);
    finish();
  }, deadlineMs).unref();
  return {
    fail,
    finish,
    step: (name) => summary.steps.push(name),
    // withTimeout bounds a promise that has no timeout of its own.
    withTimeout(p, ms, what) {
      let timer;
      return Promise.race([
        p,
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
        }),
      ]).finally(() => clearTimeout(timer));
    },
  };
}
