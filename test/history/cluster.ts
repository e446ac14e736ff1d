import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const BIN = '/usr/lib/postgresql/15/bin';

/**
 * A throwaway PostgreSQL 15 cluster of its own: initdb into a temporary directory as user postgres, listening on
 * 127.0.0.1 at a free port, so a fault drill can kill -9 its postmaster without touching the shared clusters
 * (5432, Citus 9700-9702). pgvector comes from the system's extension directory, as for every cluster here.
 * `drop()` stops it and removes the directory; call it in afterAll (it is safe to call twice).
 */
export interface Cluster {
  port: number;
  url: (db?: string) => string;
  /** SIGKILL the postmaster alone, as the OOM killer would; returns its pid and its backends' (left to die on their own). */
  kill9(): number[];
  /** SIGSTOP (or, `false`, SIGCONT) the postmaster and every process it forked: the whole node frozen, its sockets open. */
  freeze(on: boolean): number;
  start(): Promise<void>;
  drop(): void;
}

/** The postgres user's uid and gid (initdb and the server refuse to run as root), from /etc/passwd. */
function postgresUser(): { uid: number; gid: number; home: string } | null {
  const line = fs
    .readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) return null;
  const [, , uid, gid, , home] = line.split(':');
  return { uid: Number(uid), gid: Number(gid), home: home || '/tmp' };
}

const asPostgres = (args: string[], opts: { allowFail?: boolean } = {}) => {
  // The postgres user's own HOME: a server inherits the environment, and libpq inside it (Citus' connections
  // between nodes) reads ~/.postgresql for client certificates, which root's HOME would make unreadable.
  const { uid, gid, home } = postgresUser()!;
  const r = spawnSync(args[0]!, args.slice(1), {
    encoding: 'utf8',
    uid,
    gid,
    cwd: '/tmp',
    env: { ...process.env, HOME: home },
  });
  if (r.status !== 0 && !opts.allowFail) throw new Error(`${args.join(' ')}: ${r.stderr || r.stdout}`);
  return r;
};

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

export function postgresAvailable(): boolean {
  return fs.existsSync(path.join(BIN, 'initdb')) && postgresUser() !== null && process.getuid?.() === 0;
}

export async function createCluster(opts: { maxConnections?: number; conf?: string[] } = {}): Promise<Cluster> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `hist-${process.pid}-`));
  fs.chmodSync(dir, 0o755);
  const data = path.join(dir, 'data');
  const sock = path.join(dir, 'sock');
  fs.mkdirSync(sock);
  const u = postgresUser()!;
  for (const d of [dir, sock]) fs.chownSync(d, u.uid, u.gid);
  const port = await freePort();
  asPostgres([`${BIN}/initdb`, '-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  // Durable as a production cluster is (fsync on), small, and quick to crash-recover.
  fs.appendFileSync(
    path.join(data, 'postgresql.conf'),
    [
      `port = ${port}`,
      `listen_addresses = '127.0.0.1'`,
      `unix_socket_directories = '${sock}'`,
      `max_connections = ${opts.maxConnections ?? 60}`,
      'shared_buffers = 32MB',
      'fsync = on',
      'synchronous_commit = on',
      `log_min_messages = warning`,
      'restart_after_crash = on',
      ...(opts.conf ?? []),
    ].join('\n') + '\n',
  );
  let dropped = false;
  let orphans: number[] = [];
  const postmasterPid = (): number | null => {
    try {
      return Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    } catch {
      return null;
    }
  };
  const children = (pm: number) =>
    spawnSync('ps', ['-o', 'pid=', '--ppid', String(pm)], { encoding: 'utf8' })
      .stdout.split('\n')
      .map(Number)
      .filter((n) => n > 0);
  const cluster: Cluster = {
    port,
    url: (db = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${db}`,
    kill9() {
      const pm = postmasterPid();
      if (!pm) return [];
      // This cluster's own processes only: its postmaster, and the backends it forked, remembered so start()
      // can wait for them (they notice their postmaster's death and exit; PostgreSQL will not start while they
      // still hold its shared memory).
      orphans = children(pm);
      process.kill(pm, 'SIGKILL');
      return [pm, ...orphans];
    },
    freeze(on) {
      const pm = postmasterPid();
      if (!pm) return 0;
      // The postmaster first, so that it forks nothing new while its children are stopped; continued in reverse.
      const pids = [pm, ...children(pm)];
      for (const p of on ? pids : pids.reverse()) {
        try {
          process.kill(p, on ? 'SIGSTOP' : 'SIGCONT');
        } catch {
          /* a backend that ended meanwhile */
        }
      }
      return pids.length;
    },
    async start() {
      const alive = (p: number) => {
        try {
          process.kill(p, 0);
          return true;
        } catch {
          return false;
        }
      };
      for (let i = 0; i < 100 && orphans.some(alive); i++) await new Promise((res) => setTimeout(res, 100));
      for (const p of orphans.filter(alive)) process.kill(p, 'SIGKILL');
      orphans = [];
      // After a kill -9 the old postmaster.pid stays behind; pg_ctl sees its process is gone and starts over it (crash recovery).
      for (let i = 0; ; i++) {
        const r = asPostgres([`${BIN}/pg_ctl`, '-D', data, '-l', path.join(dir, 'log'), '-w', '-t', '60', 'start'], {
          allowFail: true,
        });
        if (r.status === 0) return;
        if (i >= 20)
          throw new Error(
            `the throwaway cluster did not start: ${r.stderr}${fs.existsSync(path.join(dir, 'log')) ? fs.readFileSync(path.join(dir, 'log'), 'utf8').slice(-2000) : ''}`,
          );
        await new Promise((res) => setTimeout(res, 500));
      }
    },
    drop() {
      if (dropped) return;
      dropped = true;
      cluster.freeze(false);
      asPostgres([`${BIN}/pg_ctl`, '-D', data, '-m', 'immediate', 'stop'], { allowFail: true });
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  // Dropped also when the test process ends without its afterAll (a crash, a timeout): the postmaster is a daemon.
  process.once('exit', () => cluster.drop());
  await cluster.start();
  return cluster;
}
