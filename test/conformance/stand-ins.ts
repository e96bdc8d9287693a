/**
 * Stand-ins for conformance scenarios the installed suite ships only as a placeholder (every check
 * SKIPPED, which run.ts reports as 'skip'): each checks what the scenario's own description
 * says, in the suite's check format, against the fixture tools the suite's tasks scenarios use.
 *
 * tasks-status-notifications (@modelcontextprotocol/conformance 0.2.0-alpha.12: "pending
 * subscriptions/listen rewrite"): a client declaring io.modelcontextprotocol/tasks creates tasks
 * (`slow_compute`, `confirm_delete`) and names them on a `subscriptions/listen` stream. Each
 * `notifications/tasks` must carry taskId, status and the listen request's subscriptionId; an
 * `input_required` one its inputRequests, a `completed` one its result (the DetailedTask shape,
 * as tasks/get shows it). Notifications are optional in the extension, but a server that
 * acknowledges a task id has agreed to send them: the task must then be heard to its end.
 */
import { modern, rawPost, sseMessages } from '../helpers/raw.js';
import type { ConformanceCheck, ScenarioResult } from './run.js';

const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} }, elicitation: { form: {} } };
/** How long a task of the fixture may take to be heard to its end. */
const HEARD_WITHIN_MS = 15_000;

let nextId = 1;

async function post(url: string, method: string, params: Record<string, unknown>): Promise<any> {
  const m = modern(nextId++, method, params, TASKS);
  const reply = await rawPost(url, m.body, m.headers, AbortSignal.timeout(HEARD_WITHIN_MS));
  const msg = reply.messages.at(-1);
  if (!msg?.result) throw new Error(`${method} failed: ${JSON.stringify(msg?.error ?? reply.text.slice(0, 300))}`);
  return msg.result;
}

/** Opens a listen stream for `taskIds`; its acknowledgement, its messages as they come, and `close`. */
async function listen(url: string, taskIds: string[]) {
  const m = modern(nextId++, 'subscriptions/listen', { notifications: { taskIds } }, TASKS);
  const abort = new AbortController();
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...m.headers },
    body: JSON.stringify(m.body),
    signal: abort.signal,
  });
  const stream = sseMessages(res);
  const ack = await within(
    stream.next((n) => n.method === 'notifications/subscriptions/acknowledged' || n.error !== undefined),
    'the acknowledgement',
  );
  return { id: m.body.id, ack, stream, close: () => abort.abort() };
}

function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not come within ${HEARD_WITHIN_MS} ms`)), HEARD_WITHIN_MS)),
  );
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** What is wrong with one notifications/tasks for `taskId` on stream `subscriptionId` (nothing: []). */
function shapeProblems(n: any, taskId: string, subscriptionId: unknown): string[] {
  const p = n.params ?? {};
  const problems: string[] = [];
  if (p.taskId !== taskId) problems.push(`notification names task ${JSON.stringify(p.taskId)}, not the one listened to`);
  if (typeof p.status !== 'string') problems.push('status notification MUST carry status');
  for (const field of ['createdAt', 'lastUpdatedAt'])
    if (typeof p[field] !== 'string') problems.push(`status notification MUST carry ${field} (DetailedTask)`);
  if (!('ttlMs' in p)) problems.push('status notification MUST carry ttlMs (DetailedTask)');
  if (p._meta?.['io.modelcontextprotocol/subscriptionId'] !== subscriptionId)
    problems.push('listen-stream notifications MUST carry the subscriptionId');
  if (
    p.status === 'input_required' &&
    (typeof p.inputRequests !== 'object' || !p.inputRequests || Object.keys(p.inputRequests).length === 0)
  )
    problems.push('an input_required notification MUST inline its inputRequests');
  if (p.status === 'completed' && typeof p.result !== 'object') problems.push('a completed notification MUST inline its result');
  if (p.status === 'failed' && typeof p.error !== 'object') problems.push('a failed notification MUST inline its error');
  return problems;
}

function check(id: string, name: string, description: string, problems: string[]): ConformanceCheck {
  return {
    id,
    name,
    description,
    status: problems.length ? 'FAILURE' : 'SUCCESS',
    ...(problems.length ? { errorMessage: problems.join('; ') } : {}),
  };
}

/** Follows one task on a listen stream to its end; the problems seen. `answer`: what to do when it asks for input. */
async function follow(
  url: string,
  taskId: string,
  answer?: (inputRequests: Record<string, unknown>) => Promise<void>,
): Promise<{ acknowledged: string[]; shape: string[]; statuses: string[] }> {
  const l = await listen(url, [taskId]);
  try {
    if (l.ack.error)
      return { acknowledged: [`subscriptions/listen with taskIds failed: ${JSON.stringify(l.ack.error)}`], shape: [], statuses: [] };
    const agreed = l.ack.params?.notifications?.taskIds;
    if (!Array.isArray(agreed) || !agreed.includes(taskId))
      return {
        acknowledged: [
          `the acknowledgement does not name the task listened to (notifications: ${JSON.stringify(l.ack.params?.notifications)})`,
        ],
        shape: [],
        statuses: [],
      };
    const isTask = (n: any) => n.method === 'notifications/tasks';
    if (answer) {
      const asking = await within(
        l.stream.next((n) => isTask(n) && n.params?.status === 'input_required'),
        'an input_required notification',
      );
      await answer(asking.params.inputRequests ?? {});
    }
    await within(
      l.stream.next((n) => isTask(n) && ['completed', 'failed', 'cancelled'].includes(n.params?.status)),
      'a terminal notification',
    );
    const told = l.stream.messages.filter(isTask);
    return { acknowledged: [], shape: told.flatMap((n) => shapeProblems(n, taskId, l.id)), statuses: told.map((n) => n.params.status) };
  } finally {
    l.close();
  }
}

/** The tasks-status-notifications stand-in against the server at `url`. */
export async function tasksStatusNotifications(url: string): Promise<ScenarioResult> {
  const checks: ConformanceCheck[] = [];
  try {
    const slow = await post(url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 2, label: 'status-notifications' } });
    if (slow.resultType !== 'task') throw new Error(`slow_compute did not create a task (resultType ${JSON.stringify(slow.resultType)})`);
    const working = await follow(url, slow.taskId);
    const ask = await post(url, 'tools/call', { name: 'confirm_delete', arguments: { filename: 'status-notifications.txt' } });
    if (ask.resultType !== 'task') throw new Error(`confirm_delete did not create a task (resultType ${JSON.stringify(ask.resultType)})`);
    const asking = await follow(url, ask.taskId, async (inputRequests) => {
      const inputResponses = Object.fromEntries(
        Object.keys(inputRequests).map((key) => [key, { action: 'accept', content: { confirm: true } }]),
      );
      await post(url, 'tasks/update', { taskId: ask.taskId, inputResponses });
    });
    const missed = (tool: string, statuses: string[], expected: string[]) =>
      expected.filter((s) => !statuses.includes(s)).map((s) => `${tool}: no ${s} notification`);
    checks.push(
      check(
        'tasks-status-notifications-each-change',
        'TasksStatusNotificationsEachChange',
        'A task listened to is heard at each status change to its end',
        [
          ...missed('slow_compute', working.statuses, ['completed']),
          ...missed('confirm_delete', asking.statuses, ['input_required', 'working', 'completed']),
        ],
      ),
    );
    checks.push(
      check(
        'tasks-status-notifications-acknowledged',
        'TasksStatusNotificationsAcknowledged',
        'subscriptions/listen naming a task of the client acknowledges it in notifications.taskIds',
        [...working.acknowledged, ...asking.acknowledged],
      ),
    );
    checks.push(
      check(
        'tasks-status-notifications-shape',
        'TasksStatusNotificationsShape',
        'Each notifications/tasks carries taskId, status and the DetailedTask fields, with inputRequests, result or error inlined',
        [...working.shape, ...asking.shape],
      ),
    );
  } catch (err) {
    checks.push(
      check('tasks-status-notifications-run', 'TasksStatusNotificationsRun', 'The scenario runs to its end', [(err as Error).message]),
    );
  }
  const problems = checks.filter((c) => c.status === 'FAILURE').map((c) => `${c.id}: ${c.errorMessage}`);
  return { outcome: problems.length ? 'fail' : 'pass', checks, problems };
}

/** Stand-ins by scenario name. */
export const STAND_INS: Record<string, (url: string) => Promise<ScenarioResult>> = {
  'tasks-status-notifications': tasksStatusNotifications,
};
