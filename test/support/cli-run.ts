import { spawn } from 'node:child_process';
import { ROOT, TSX_CLI, childEnv } from '../mcp/support';

/** What a user sees of one `retract` command: its exit status, stdout and stderr. */
export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `retract <args>` as a child process (node + tsx, as the bin does); SIGKILLed and rejected after `timeoutMs`. */
export function retract(
  args: string[],
  env: Record<string, string> = {},
  opts: { timeoutMs?: number } = {},
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TSX_CLI, 'src/cli/main.ts', ...args], {
      cwd: ROOT,
      env: childEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`retract ${args.join(' ')} timed out\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, opts.timeoutMs ?? 120_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
