#!/usr/bin/env python3
"""What a move's compare-and-set costs Redis itself, for several shapes of the stored game
(issue 29: "Redis at most the floor's").

Starts a throwaway redis-server (the machine's, no persistence) on a free loopback port,
then for each shape runs N compare-and-sets over 1,000 games, pipelined 100 at a time on one
connection, and prints EVALSHA's mean server-side time per call from `INFO commandstats`
(the script's whole run, its inner calls included), and each inner command's own.
Server-side time leaves out the network and the client; the live path's figures are larger
(cache misses, other processes), but the shapes keep their order.

The shapes (arguments at the sizes of a move of the load tool's games, storage format 2:
a state of 552 bytes, a log entry of 250, a move record of 11, keys of ~70):

- floor: `../shared/floor`'s script: HGET v, compare, HSET v s.
- today: game-session's compare-and-set as it is (read from services/game-session/src/store.rs),
  for a plain move in storage format 2: HGET v, compare, HSET v s, RPUSH log entry, RPUSH
  move record.
- format 3: a plain move in storage format 3, by game-session's script for it
  (`move_in_hash_script`, read from store.rs): HGET v, compare, one HSET of the version,
  state, entry, record and the records' count.
- today timed, format 3 timed: the same two with a clock's deadline scheduled (ZADD to the
  shard's deadlines), as every move of a timed game.
- one list: the log entry and the move record pushed to one list (HGET, HSET, RPUSH).
- one hash: the entry and the record as fields of the game's hash (HGET, one HSET).
- no log: no log entry stored, the move record a field of the game's hash (HGET, one HSET):
  what is left if the log were made from the move records when it is read.
- HSETNX: the entry's field, named by the new version, as the compare itself (HSETNX), then
  one HSET of the state and the record: two calls, as the floor.

Also the memory a game takes in each shape once played (`used_memory` after the calls less
before, per game: N / 1,000 plies each).

Usage: scripts/redis-cas-shapes.py [N] [ROUNDS]   (default 20000 calls, 3 rounds)
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
STORE = os.path.join(HERE, "..", "services", "game-session", "src", "store.rs")


def today_script():
    """The compare-and-set's text from store.rs: its head and tail around the deadline
    snippet (never reached by a plain move, so a stand-in of the same shape)."""
    src = open(STORE).read()
    head = re.search(r'let head = r#"(.*?)"#;', src, re.S).group(1)
    tail = re.search(r'let tail = r#"(.*?)"#;', src, re.S).group(1)
    snippet = ("      if tonumber(at) >= 0 then redis.call('ZADD', key, at, member) "
               "else redis.call('ZREM', key, member) end\n")
    return head + snippet + tail


def move_in_hash_script():
    """The compare-and-set of a plain write in storage format 3, from store.rs (the
    deadline snippet as in `today_script`)."""
    src = open(STORE).read()
    head = re.search(r'let move_head = r#"(.*?)"#;', src, re.S).group(1)
    snippet = ("  if tonumber(at) >= 0 then redis.call('ZADD', key, at, member) "
               "else redis.call('ZREM', key, member) end\n")
    return head + snippet + "end\nreturn 1\n"


FLOOR = r"""
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if v ~= tonumber(ARGV[1]) then return -1 - v end
redis.call('HSET', KEYS[1], 'v', v + 1, 's', ARGV[2])
return v + 1
"""
ONE_LIST = r"""
local current = redis.call('HGET', KEYS[1], 'v')
if current == false then current = '0' end
if current ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 's', ARGV[3])
redis.call('RPUSH', KEYS[2], ARGV[4], ARGV[5])
return 1
"""
ONE_HASH = r"""
local current = redis.call('HGET', KEYS[1], 'v')
if current == false then current = '0' end
if current ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 's', ARGV[3], 'e' .. ARGV[2], ARGV[4], 'r' .. ARGV[2], ARGV[5])
return 1
"""
NO_LOG = r"""
local current = redis.call('HGET', KEYS[1], 'v')
if current == false then current = '0' end
if current ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 's', ARGV[3], 'r' .. ARGV[2], ARGV[4])
return 1
"""
HSETNX = r"""
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[3]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[2], ARGV[4], ARGV[5])
return 1
"""


def enc(parts):
    out = [b"*%d\r\n" % len(parts)]
    for p in parts:
        if isinstance(p, str):
            p = p.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(p), p))
    return b"".join(out)


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.f = self.sock.makefile("rb")

    def reply(self):
        line = self.f.readline()
        kind = line[:1]
        if kind == b"$":
            n = int(line[1:])
            return self.f.read(n + 2)[:-2] if n >= 0 else None
        if kind == b"*":
            return [self.reply() for _ in range(max(int(line[1:]), 0))]
        if kind == b"-":
            raise RuntimeError(line.decode().strip())
        return line[1:].strip()

    def cmd(self, *parts):
        self.sock.sendall(enc(parts))
        return self.reply()


def used_memory(conn):
    info = conn.cmd("INFO", "memory").decode()
    return int(re.search(r"used_memory:(\d+)", info).group(1))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    server = shutil.which("redis-server")
    if not server:
        sys.exit("redis-server is not installed")
    port = free_port()
    work = tempfile.mkdtemp(prefix="cas-shapes-")
    proc = subprocess.Popen([server, "--port", str(port), "--save", "", "--appendonly", "no",
                             "--dir", work], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                conn = Conn(port)
                conn.cmd("PING")
                break
            except OSError:
                time.sleep(0.05)
        else:
            sys.exit("redis-server did not start")
        ids = [str(uuid.uuid4()) for _ in range(1000)]
        key = [f"bench:{{s7-0}}:game:{g}" for g in ids]
        state, entry, record = b"s" * 552, b"e" * 250, b"r" * 11
        deadlines = "bench:{s7-0}:deadlines"
        shapes = [
            ("floor", FLOOR, lambda g, v: ["1", key[g], str(v), state]),
            ("today", today_script(), lambda g, v: [
                "3", key[g], key[g] + ":log", key[g] + ":moves", str(v), str(v + 1), state,
                "", "1", "-1", entry, record]),
            ("format 3", move_in_hash_script(), lambda g, v: [
                "1", key[g], str(v), str(v + 1), state, entry, record, str(v + 1)]),
            ("today timed", today_script(), lambda g, v: [
                "4", key[g], key[g] + ":log", key[g] + ":moves", deadlines, str(v), str(v + 1),
                state, "D", "1", "-1", str(1_800_000_000_000 + v), ids[g], entry, record]),
            ("f3 timed", move_in_hash_script(), lambda g, v: [
                "2", key[g], deadlines, str(v), str(v + 1), state, entry, record, str(v + 1),
                str(1_800_000_000_000 + v), ids[g]]),
            ("one list", ONE_LIST, lambda g, v: [
                "2", key[g], key[g] + ":log", str(v), str(v + 1), state, entry, record]),
            ("one hash", ONE_HASH, lambda g, v: [
                "1", key[g], str(v), str(v + 1), state, entry, record]),
            ("no log", NO_LOG, lambda g, v: ["1", key[g], str(v), str(v + 1), state, record]),
            ("HSETNX", HSETNX, lambda g, v: [
                "1", key[g], f"e{v + 1}", state, entry, f"r{v + 1}", record]),
        ]
        results = {name: [] for name, _, _ in shapes}
        for _ in range(rounds):
            for name, script, args in shapes:
                conn.cmd("FLUSHALL")
                sha = conn.cmd("SCRIPT", "LOAD", script).decode()
                before = used_memory(conn)
                version = [0] * len(ids)
                conn.cmd("CONFIG", "RESETSTAT")
                batch = []
                for i in range(n):
                    g = i % len(ids)
                    batch.append(enc(["EVALSHA", sha] + args(g, version[g])))
                    version[g] += 1
                    if len(batch) == 100 or i == n - 1:
                        conn.sock.sendall(b"".join(batch))
                        for _ in batch:
                            if conn.reply() in (b"0", b"-1"):
                                raise RuntimeError(f"{name}: a compare-and-set failed")
                        batch = []
                stats = conn.cmd("INFO", "commandstats").decode()
                per = {m[1]: int(m[3]) / int(m[2]) for m in
                       re.finditer(r"cmdstat_(\S+):calls=(\d+),usec=(\d+)", stats)}
                inner = {k: round(v, 2) for k, v in per.items()
                         if k in ("hget", "hset", "rpush", "hsetnx")}
                per_game = (used_memory(conn) - before) / len(ids)
                results[name].append((per["evalsha"], inner, per_game))
        floor = sorted(r[0] for r in results["floor"])[rounds // 2]
        plies = n // len(ids)
        print(f"{'shape':10} {'EVALSHA us/call (median)':>26} {'/ floor':>8} "
              f"{'bytes a game at ' + str(plies) + ' plies':>26}  inner us/call (last round)")
        for name, _, _ in shapes:
            med = sorted(r[0] for r in results[name])[rounds // 2]
            mem = results[name][-1][2]
            print(f"{name:10} {med:26.2f} {med / floor:8.2f} {mem:26.0f}  {results[name][-1][1]}")
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
