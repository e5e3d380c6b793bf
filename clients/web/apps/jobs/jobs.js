// Jobs: `run {name, steps}` answers at once with a runId and streams `job.progress` events (one
// per step) and a final `job.done` through appserver.app.emit. A replayed run is shown as done
// without running (and emitting) again.
const jobs = {};
let counter = 0;
const list = document.getElementById("jobs");

function render() {
  list.replaceChildren(
    ...Object.values(jobs).map((j) => {
      const li = document.createElement("li");
      li.id = j.runId;
      li.innerHTML = `<b></b> <progress max="${j.steps}" value="${j.done}"></progress> <span></span>`;
      li.querySelector("b").textContent = j.name;
      li.querySelector("span").textContent = j.done >= j.steps ? "done" : `${j.done}/${j.steps}`;
      return li;
    }),
  );
}

function run(p, ctx) {
  const runId = `run_${++counter}`;
  const job = { runId, name: p.name ?? runId, steps: p.steps ?? 5, done: 0 };
  jobs[runId] = job;
  if (ctx.replay) {
    job.done = job.steps;
    render();
    return { runId };
  }
  render();
  const tick = () => {
    job.done += 1;
    render();
    appserver.app.emit(runId, "job.progress", { step: job.done, of: job.steps });
    if (job.done < job.steps) setTimeout(tick, 150);
    else appserver.app.emit(runId, "job.done", { name: job.name });
  };
  setTimeout(tick, 150);
  return { runId };
}

appserver.app
  .register({
    appId: "jobs",
    name: "Jobs",
    description: "Runs jobs in steps, streaming progress",
    state: { jobs: { description: "Every job with its progress", handler: () => Object.values(jobs) } },
    commands: {
      run: {
        description: "Start a job; progress streams as job.progress events, then job.done",
        params: {
          type: "object",
          properties: { name: { type: "string" }, steps: { type: "integer", minimum: 1, maximum: 100 } },
        },
        streams: ["job.progress", "job.done"],
        handler: run,
      },
    },
    events: {
      "job.progress": { description: "One step of a job: {step, of}" },
      "job.done": { description: "A job finished: {name}" },
    },
    reset: () => {
      for (const k of Object.keys(jobs)) delete jobs[k];
      counter = 0;
      render();
    },
  })
  .then((r) => (document.getElementById("info").textContent = `window ${r.windowId}`))
  .catch((e) => (document.getElementById("info").textContent = `not registered: ${e.message}`));
