// A TypeScript client of usersvc, made from the OpenAPI document it serves
// (examples/tasks.py's tasks beside users) by openapi-typescript, sending
// with openapi-fetch: tools/lint-openapi.sh generates `tasks.d.ts`, compiles
// this with `tsc --strict` (which fails if the document does not declare a
// parameter sent here, `priority[in]` among them) and runs it against a
// server. It exits 1, saying why, if an answer is not what it should be.
//
//     node dist/send.js http://127.0.0.1:PORT
import createClient from "openapi-fetch";
import type { paths } from "./tasks.js";

declare const process: { argv: string[]; exit(code: number): never };

// As docs/api.md says: the media types read named (each answer also has a page).
const client = createClient<paths, "application/json" | "application/problem+json">(
  { baseUrl: process.argv[2] });

function fail(what: string): never {
  console.error(`typescript client: ${what}`);
  process.exit(1);
}

function expect(what: string, found: unknown, wanted: unknown): void {
  if (JSON.stringify(found) !== JSON.stringify(wanted)) {
    fail(`${what}: ${JSON.stringify(found)}, not ${JSON.stringify(wanted)}`);
  }
}

const made = await client.POST("/users", { body: { name: "Ada Lovelace", email: "ada@example.org" } });
if (!made.data) fail(`POST /users answered ${made.response.status}`);
const owner = made.data.id;

const tasks: [string, "low" | "normal" | "high", boolean][] = [
  ["Write the notes", "high", false], ["Read the proofs", "low", false], ["Édit the index", "normal", true]];
const ids: number[] = [];
const created: string[] = [];
for (const [title, priority, done] of tasks) {
  const task = await client.POST("/tasks", { body: { title, priority, done, owner } });
  if (!task.data) fail(`POST /tasks answered ${task.response.status}`);
  ids.push(task.data.id);
  created.push(task.data.created);
}

// Operators in the parameters' names, each declared and typed by its field:
// a literal of the query's type, so a name the document lacks fails tsc.
type TaskQuery = NonNullable<paths["/tasks"]["get"]["parameters"]["query"]>;
const asked: [string, TaskQuery, number[]][] = [
  ["priority[in]=normal,high by title", { "priority[in]": "normal,high", sort: "title" }, [ids[0], ids[2]]],
  ["done[ne]=true&priority[gte]=normal", { "done[ne]": true, "priority[gte]": "normal" }, [ids[0]]],
  ["created[gte]&owner[eq]", { "created[gte]": created[1], "owner[eq]": owner }, ids.slice(1)],
  ["q=edit (folded)", { q: "edit" }, [ids[2]]],
];
for (const [what, query, wanted] of asked) {
  const answer = await client.GET("/tasks", { params: { query } });
  expect(what, answer.data?.map((t) => t.id), wanted);
}
const refused = await client.GET("/tasks", { params: { query: { "priority[gt]": "high", limit: 0 } } });
expect("limit=0 refused", refused.response.status, 400);
console.log(`typescript client: ${tasks.length} tasks made, ${asked.length + 1} questions answered as they should be`);
