// A third-party MCP client: the official TypeScript SDK. It connects to cmdgate over
// stdio (MODE=stdio: it starts CMDGATE_BIN mcp ...) or streamable HTTP (MODE=http:
// MCP_URL with the bearer token), lists the tools, calls exec_command (allowed, denied,
// without cwd), shell_exec, system_info, execute_command, job_run and job_status, and
// prints what it saw as one JSON object on stdout.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const env = process.env;
const transport = env.MODE === "stdio"
  ? new StdioClientTransport({
      command: env.CMDGATE_BIN,
      args: ["mcp", "--workspace", env.WORKSPACE, "--data", env.DATA, "--sandbox", "process"],
      env: { ...env, CMDGATE_TOKEN: env.TOKEN },
      stderr: "ignore",
    })
  : new StreamableHTTPClientTransport(new URL(env.MCP_URL), {
      requestInit: { headers: { Authorization: `Bearer ${env.TOKEN}` } },
    });

const client = new Client({ name: "ts-sdk-test", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const allowed = await client.callTool({ name: "exec_command", arguments: { cwd: ".", command: ["echo", "from-ts"] } });
const denied = await client.callTool({ name: "exec_command", arguments: { cwd: ".", command: ["sudo", "id"] } });
const missing = await client.callTool({ name: "exec_command", arguments: { command: ["ls"] } });
const shell = await client.callTool({ name: "shell_exec", arguments: { uri: ".", cmd: "echo from-shell" } });
const info = await client.callTool({ name: "system_info", arguments: {} });
const execute = await client.callTool({ name: "execute_command", arguments: { command: "echo from-execute" } });
const jobRun = await client.callTool({ name: "job_run", arguments: { command: "echo from-job", snapshot_after_ms: 10000 } });
const jobStatus = await client.callTool({ name: "job_status", arguments: { job_id: jobRun.structuredContent?.job_id ?? "" } });
console.log(JSON.stringify({
  server: client.getServerVersion(),
  instructions: client.getInstructions(),
  tools: tools.tools,
  allowed,
  denied,
  missing,
  shell,
  info,
  execute,
  jobRun,
  jobStatus,
}));
await client.close();
