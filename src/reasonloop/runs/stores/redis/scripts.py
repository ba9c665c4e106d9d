"""The Lua scripts the Redis run store runs: each does, in one round trip and as one step for
every instance, what would otherwise be a read, a parse in the server process and a write, or a
command per event.

Keys come in ARGV, not KEYS: the store assumes one Redis server (or a primary), not a cluster.
redis-py loads a script again when Redis has lost it (after a restart).
"""

from __future__ import annotations

from reasonloop.runs.models import TERMINAL

__all__ = [
    "ADD_MESSAGES",
    "ADD_STEP",
    "APPEND_EVENTS",
    "CLAIM_RUN",
    "CREATE_RUN",
    "PUT_STEPS",
    "TAKE_TOKEN",
    "UPDATE_RUNS",
]

_TERMINAL_LIST = "," + ",".join(sorted(TERMINAL)) + ","
"""The terminal statuses as the scripts look them up (``string.find`` of ``,status,``)."""

APPEND_EVENTS = """
local results = {}
for i = 1, #ARGV, 3 do
  results[#results + 1] = redis.pcall('XADD', ARGV[i], ARGV[i + 1], 'e', ARGV[i + 2])
end
return results
"""
"""XADD of each ``key, id, payload`` triple in ARGV; one reply per entry: its id, or its error.

Many events in one command: a pipeline of XADDs costs the client a command and a reply per
event (benchmarks/README.md, "Design notes: Redis appends in one script")."""
UPDATE_RUNS = """
local inflight, ttl, i = ARGV[1], ARGV[2], 3
while i <= #ARGV do
  local key, run_id, events, steps, first = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], i + 5
  i = first + 2 * tonumber(ARGV[i + 4])
  if redis.call('EXISTS', key) == 1 then
    redis.call('HSET', key, unpack(ARGV, first, i - 1))
    local status = redis.call('HGET', key, 'status')
    if status and string.find('TERMINAL_LIST', ',' .. status .. ',', 1, true) then
      redis.call('SREM', inflight, run_id)
      redis.call('EXPIRE', key, ttl)
      redis.call('EXPIRE', events, ttl)
      redis.call('DEL', steps)
    end
  end
end
return 0
""".replace("TERMINAL_LIST", _TERMINAL_LIST)
"""Set fields of runs' hashes: ARGV is the in-flight set and the ttl, then per run its hash key,
id, events key, steps key, how many field/value pairs follow, and the pairs. An unknown run is
skipped; a run whose status is now terminal leaves the in-flight set, starts to expire and
drops its steps (an ended run is never resumed). One round trip
for any number of runs, and the records are neither read nor parsed by the server process
(the store reads them back over the record)."""
ADD_MESSAGES = """
local head = redis.call('GET', ARGV[1])
if not head then return 0 end
local tenant = cjson.decode(head)['tenant']
head = string.gsub(head, '"updated_at":[-+%d.eE]+', '"updated_at":' .. ARGV[4], 1)
redis.call('RPUSH', ARGV[2], unpack(ARGV, 8))
redis.call('SET', ARGV[1], head, 'EX', ARGV[3])
redis.call('EXPIRE', ARGV[2], ARGV[3])
redis.call('ZADD', ARGV[6] .. tenant, ARGV[4], ARGV[5])
redis.call('ZREMRANGEBYSCORE', ARGV[6] .. tenant, '-inf', ARGV[7])
return 1
"""
"""Messages added to a conversation that still exists (ARGV: its key, its messages' key, the
ttl, the time, its id, the prefix of the tenants' indexes, the index's lower bound, then the
messages as JSON), with its ``updated_at`` and its place in its tenant's index moved to the
time. One round trip, and the conversation's record is not read or parsed by the server
process: its ``updated_at`` is replaced in its JSON text (a number, written by pydantic; a
string field holding those characters has its quotes escaped and cannot match)."""
CREATE_RUN = """
local run_id, claim = ARGV[2], ARGV[11]
if claim ~= '' then
  if ARGV[14] == '1' then
    local holder = redis.call('GET', claim)
    if holder and holder ~= run_id then
      local status = redis.call('HGET', ARGV[12] .. holder, 'status')
      if status and not string.find('TERMINAL_LIST', ',' .. status .. ',', 1, true) then return holder end
    end
  end
  redis.call('SET', claim, run_id, 'EX', ARGV[13])
end
redis.call('HSET', ARGV[1], 'data', ARGV[3], 'status', ARGV[4], 'tenant', ARGV[5], 'instance', ARGV[6])
redis.call('ZADD', ARGV[7], ARGV[8], run_id)
redis.call('ZREMRANGEBYSCORE', ARGV[7], '-inf', ARGV[9])
redis.call('SADD', ARGV[10], run_id)
return false
""".replace("TERMINAL_LIST", _TERMINAL_LIST)
"""A run recorded (ARGV: its hash key, id, record, status, tenant, instance, its tenant's index, its
creation time, the index's lower bound, the in-flight set, its conversation's ``convrun`` key or
'', the prefix of run keys, the ttl, and '1' when it must be its conversation's only run in
flight). Every run of a conversation names itself in the conversation's ``convrun`` key; with '1',
a run whose predecessor there is still in flight is not recorded, and the predecessor's id is
the reply. One script: the check and the record are one step for every instance."""
PUT_STEPS = """
for i = 1, #ARGV, 4 do
  local status = redis.call('HGET', ARGV[i], 'status')
  if not (status and string.find('TERMINAL_LIST', ',' .. status .. ',', 1, true)) then
    redis.call('HSET', ARGV[i + 1], ARGV[i + 2], ARGV[i + 3])
  end
end
return 0
""".replace("TERMINAL_LIST", _TERMINAL_LIST)
"""Steps of runs that have not ended (ARGV: per step its run's hash key, the run's steps key, the
step's key and value); a run that has keeps none (its end dropped them). Many steps, of many
runs, in one command."""
ADD_STEP = """
local status = redis.call('HGET', ARGV[1], 'status')
if not status or string.find('TERMINAL_LIST', ',' .. status .. ',', 1, true) then return 0 end
return redis.call('HSETNX', ARGV[2], ARGV[3], ARGV[4])
""".replace("TERMINAL_LIST", _TERMINAL_LIST)
"""A step of a run in flight kept only if the run has none of that key (ARGV: the run's hash key, its
steps key, the step's key and value); 1 when kept. Of answers given at once, one is kept."""
CLAIM_RUN = """
if redis.call('HGET', ARGV[1], 'instance') ~= ARGV[2] then return 0 end
local status = redis.call('HGET', ARGV[1], 'status')
if not status or string.find('TERMINAL_LIST', ',' .. status .. ',', 1, true) then return 0 end
redis.call('HSET', ARGV[1], 'instance', ARGV[3], 'f:instance', ARGV[4])
return 1
""".replace("TERMINAL_LIST", _TERMINAL_LIST)
"""An in-flight run recorded as executed by one instance recorded as executed by another (ARGV: the
run's hash key, the instance, the new one, and the new one as JSON); 1 when it was, 0 when the run
is not in flight on that instance. One script: of instances claiming the run at once, one wins."""
TAKE_TOKEN = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local rate, burst = tonumber(ARGV[2]), tonumber(ARGV[3])
local saved = redis.call('HMGET', ARGV[1], 'tokens', 'at')
local tokens, at = tonumber(saved[1]), tonumber(saved[2])
if tokens == nil or at == nil then tokens, at = burst, now end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
redis.call('HSET', ARGV[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', ARGV[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
return tostring(wait)
"""
"""A token taken from a rate bucket (ARGV: its key, the tokens it gains a second, the most it
holds), refilled first for the time since it was last counted, on the Redis server's clock (so
instances on different machines never disagree about the time); the reply is the seconds until
a token is there, 0 when one was taken (as a string: Lua numbers reach the client as integers).
A bucket left alone expires once it would be full again."""
