/**
 * Tasks and the upstream sessions they hold, through a real proxy in front of the faulty fixture
 * over stdio, each client on its own loopback address: tasks whose client may be asked for input
 * hold a session alone, but never every one of them, and no task runs longer than
 * modern.tasks.maxRunMs.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { modernFrom } from '../helpers/from-address.js';
import { cancellations, commandLine, eventually, fixtureArgv, logEntries, startProxy, stopAll } from '../helpers/processes.js';

const dir = mkdtempSync(join(tmpdir(), 'proxy-task-sessions-'));
const TASKS_AND_INPUT = { extensions: { 'io.modelcontextprotocol/tasks': {} }, elicitation: { form: {} } };
let nextId = 1;

function config(name: string, yaml: string, log: string): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    `upstream:\n  command: ${JSON.stringify(commandLine(fixtureArgv('faulty-server')))}\n  env: { FAULTY_LOG: ${JSON.stringify(log)} }\n${yaml}`,
  );
  return file;
}

describe('tasks and exclusive upstream sessions', () => {
  afterAll(stopAll);

  it('keeps sessions for other clients when three clients leave never-ending tasks behind', async () => {
    const proxy = await startProxy([
      '--config',
      config('share', 'modern:\n  tasks: { answerWithinMs: 0 }\n', join(dir, 'share.log')),
      '--log-level',
      'debug',
    ]);
    const refusedRooms = () => logEntries(proxy).filter((e) => /no room for another task/.test(e.msg)).length;
    const tasks: Record<string, number> = {};
    // Three clients each start four calls that never end, and leave: a call that became a task is
    // answered at once; one that found no room for a task would wait for its answer, and is given up.
    for (const from of ['127.0.0.2', '127.0.0.3', '127.0.0.4']) {
      for (let i = 0; i < 4; i++) {
        const before = refusedRooms();
        const leave = new AbortController();
        const reply = modernFrom(from, proxy.url, nextId++, 'tools/call', { name: 'hang', arguments: {} }, TASKS_AND_INPUT, leave.signal);
        const noRoom = eventually(() => refusedRooms() > before, 20_000, 'an answer or no room for a task').then(() => 'no room' as const);
        const outcome = await Promise.race([reply, noRoom]);
        leave.abort();
        reply.catch(() => undefined);
        noRoom.catch(() => undefined);
        if (outcome === 'no room') continue;
        expect(outcome.msg.result?.resultType, JSON.stringify(outcome.msg).slice(0, 300)).toBe('task');
        tasks[from] = (tasks[from] ?? 0) + 1;
      }
    }
    // modern.pool: 16 sessions, 4 per client, 12 for calls alone; tasks hold at most 3 of a client's, 6 in all.
    expect(tasks).toEqual({ '127.0.0.2': 3, '127.0.0.3': 3 });
    // Another client's call that may ask for input finds a session and asks.
    const asked = await modernFrom(
      '127.0.0.5',
      proxy.url,
      nextId++,
      'tools/call',
      { name: 'elicit', arguments: { message: 'still served?' } },
      { elicitation: { form: {} } },
    );
    expect(asked.status).toBe(200);
    expect(asked.msg.result).toMatchObject({ resultType: 'input_required' });
  }, 90_000);

  it('cancels a task upstream once it has run for modern.tasks.maxRunMs, and fails it with TASK_TIMEOUT', async () => {
    const log = join(dir, 'run.log');
    const proxy = await startProxy(['--config', config('run', 'modern:\n  tasks: { answerWithinMs: 0, maxRunMs: 1500 }\n', log)]);
    const get = async (taskId: string) =>
      (await modernFrom('127.0.0.6', proxy.url, nextId++, 'tasks/get', { taskId }, TASKS_AND_INPUT)).msg.result;
    const created = await modernFrom('127.0.0.6', proxy.url, nextId++, 'tools/call', { name: 'hang', arguments: {} }, TASKS_AND_INPUT);
    expect(created.msg.result).toMatchObject({ resultType: 'task', status: 'working' });
    let state: any;
    await eventually(async () => (state = await get(created.msg.result.taskId)).status !== 'working', 15_000, 'the task stops');
    expect(state.status).toBe('failed');
    expect(state.error).toMatchObject({ code: -32603, data: { code: 'TASK_TIMEOUT', maxRunMs: 1500 } });
    expect(state.statusMessage).toMatch(/modern\.tasks\.maxRunMs/);
    await eventually(() => cancellations(log).some((c) => /maxRunMs/.test(c.reason)), 10_000, 'the call cancelled upstream');
    // The task's session is free: the client's next task takes it.
    expect(
      (
        await modernFrom(
          '127.0.0.6',
          proxy.url,
          nextId++,
          'tools/call',
          { name: 'slow_progress', arguments: { steps: 1, delayMs: 100 } },
          TASKS_AND_INPUT,
        )
      ).msg.result.resultType,
    ).toBe('task');
  });
});
