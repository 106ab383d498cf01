--[[
job_submit.lua — Fairway's submit-time GPU sharing (Slurm job_submit/lua).

A job that asks for exactly one whole GPU on one node, whose user has run
jobs of the same name that used a small part of their GPU, is given that
many shards instead (--gres=shard:N), so that two such jobs share a GPU.
Slurm 22.05 cannot turn a pending job's gpu request into shards, which is why
this happens at submit time. Which user/name pairs get how many shards is
decided by `fairway serve` (policy.Rewriter.Share) and written to a table
file that this script reads; the script makes no network call and never
decides anything on its own.

Safety, in order of importance:
  * It never rejects or delays a job: every path returns slurm.SUCCESS, and
    any error (missing, unreadable, stale or malformed table, a field it does
    not understand) leaves the job exactly as submitted.
  * A job is rewritten only when its partition is listed in the table (serve's
    --rewrite-partitions), the table is fresh (younger than its max_age:
    rewriting stops by itself when serve stops), and the job's comment does
    not carry the opt-out marker "fairway:no-rewrite".
  * Only a request for exactly one GPU (--gres=gpu[:type]:1, --gpus-per-node=1
    or --gpus=[type:]1, nothing else in the GRES request, no CPUs, memory or
    tasks per GPU, no GPU frequency, at most one node, and for --gpus one
    task, no more CPUs than it has, and at most one named node; CPUs per
    task are fine) is changed, into --gres=shard[:type]:N on one node,
    written in the form the release passed the request in ("gres:" on
    22.05, "gres/" on 24.11 and later: each release rejects the other's).

Settings: the table path is $FAIRWAY_REWRITE_TABLE in slurmctld's environment;
without it, the newer (by its generated line) of
/var/lib/fairway/fairway-rewrite.table (serve's default: SlurmUser's state
directory, mode 0640, so /etc/slurm stays read-only to SlurmUser and other
users cannot read the table) and, for tables written before that default,
fairway-rewrite.table in slurm.conf's directory ($SLURM_CONF's, else
/etc/slurm). Which table is in use, or why none is, goes to slurmctld's log
at info whenever it changes. A table larger than MAX_TABLE_BYTES is ignored:
it is read on slurmctld's submit path; so is one cut short (without a
newline at its end) or generated more than its max_age in the future.
Install: copy this file next to slurm.conf (slurmctld loads job_submit.lua
from there), set JobSubmitPlugins=lua, `scontrol reconfigure`; a site that
has its own job_submit.lua merges the two (INSTALL.md says how). Lua 5.1 to
5.4 (the one Slurm was built with). See INSTALL.md, "GPU sharing and
resource rewriting".

Table format (written atomically by serve; one record per line, fields
separated by one tab; lines starting with # are comments):
  fairway-rewrite<TAB>1
  generated<TAB><unix seconds>
  max_age<TAB><seconds>
  partition<TAB><name>                  (one line per enabled partition)
  shard<TAB><user><TAB><shards><TAB><job name>
]]

local OPT_OUT = "fairway:no-rewrite"
local ELASTIC = "fairway:elastic"
local REREAD_SECONDS = 5 -- how long a read of the table is reused
local MAX_TABLE_BYTES = 4 * 1024 * 1024 -- serve caps its table at 1 MiB by default
local NO_VAL = 4294967294 -- Slurm's NO_VAL for unset 32-bit numbers
local NO_VAL16 = 65534 -- and for unset 16-bit numbers
-- MAX_SPEC_BYTES is the longest tres_per_* string Slurm keeps: it refuses a
-- longer one (ESLURM_PATHNAME_TOO_LONG), but only after job_submit, so the
-- script sees whatever length the user sent and must not split it up.
local MAX_SPEC_BYTES = 1024

-- conf_dir is where slurm.conf lives: the directory of $SLURM_CONF in
-- slurmctld's environment, else the directory this script was loaded from
-- when Lua knows it (Slurm 22.05 loads it from a buffer, so it does not),
-- else /etc/slurm.
local function conf_dir()
	local conf = os.getenv("SLURM_CONF")
	if conf and conf ~= "" then
		local dir = conf:match("^(.*)/[^/]*$")
		if dir and dir ~= "" then
			return dir
		end
	end
	local ok, info = pcall(debug.getinfo, 1, "S")
	if ok and info and type(info.source) == "string" and info.source:sub(1, 1) == "@" then
		local dir = info.source:sub(2):match("^(.*)/[^/]*$")
		if dir and dir ~= "" then
			return dir
		end
	end
	return "/etc/slurm"
end

local TABLE_PATHS = { os.getenv("FAIRWAY_REWRITE_TABLE") }
if not TABLE_PATHS[1] or TABLE_PATHS[1] == "" then
	TABLE_PATHS = { "/var/lib/fairway/fairway-rewrite.table", conf_dir() .. "/fairway-rewrite.table" }
end

local function split_tabs(line)
	local f = {}
	for field in (line .. "\t"):gmatch("([^\t]*)\t") do
		f[#f + 1] = field
	end
	return f
end

-- plain_int reads a field the writer spells as plain decimal digits (at
-- most 12 of them), else nil: tonumber would also take "1e20", "0x10" or
-- "inf", and a shard count like 1e+20 would reach Slurm as a GRES request.
local function plain_int(s)
	if type(s) ~= "string" or not s:match("^%d+$") or #s > 12 then
		return nil
	end
	return tonumber(s)
end

-- parse_table reads the table's text; it returns nil and a reason for
-- anything it does not fully understand.
local function parse_table(text)
	-- serve ends every line with a newline; a table without one at its
	-- end was cut short (copied or written in place, not by serve), and
	-- its last record may have lost the end of its job name: "train" cut
	-- to "tra" would share another job.
	if text:sub(-1) ~= "\n" then
		return nil, "cut short (no newline at its end)"
	end
	local t = { partitions = {}, shards = {}, generated = nil, max_age = nil }
	local version = nil
	local n = 0
	for line in text:gmatch("[^\n]+") do
		n = n + 1
		line = line:gsub("\r$", "")
		if line ~= "" and line:sub(1, 1) ~= "#" then
			local f = split_tabs(line)
			local kind = f[1]
			if kind == "fairway-rewrite" then
				version = f[2]
			elseif kind == "generated" then
				t.generated = plain_int(f[2])
			elseif kind == "max_age" then
				t.max_age = plain_int(f[2])
			elseif kind == "partition" and f[2] and f[2] ~= "" then
				t.partitions[f[2]] = true
			elseif kind == "shard" then
				local user, shards, name = f[2], plain_int(f[3]), f[4]
				if not user or user == "" or not shards or shards < 1 or not name or #f ~= 4 then
					return nil, "line " .. n .. ": bad shard record"
				end
				t.shards[user .. "\t" .. name] = shards
			else
				return nil, "line " .. n .. ": unknown record " .. tostring(kind)
			end
		end
	end
	if version ~= "1" then
		return nil, "not a version 1 table"
	end
	if not t.generated or not t.max_age or t.max_age <= 0 then
		return nil, "no generated/max_age"
	end
	return t
end

local cache = { read_at = nil, tbl = nil, why = nil, logged = nil }

-- read_table reads and parses one table file; it returns the table, or nil
-- and why not (nil and nil when there is no file at path). A table
-- generated more than its max_age after now is refused like a malformed
-- one: it would never go stale, and as the newest it would hide the table
-- serve keeps writing (a clock set back, a copy from another host).
local function read_table(path, now)
	local fh, open_err = io.open(path, "r")
	if not fh then
		if open_err and not open_err:find("No such file", 1, true) then
			return nil, "table " .. path .. " unreadable: " .. open_err
		end
		return nil, nil
	end
	local text = fh:read(MAX_TABLE_BYTES + 1)
	fh:close()
	if text and #text > MAX_TABLE_BYTES then
		return nil, "table " .. path .. " ignored: larger than " .. MAX_TABLE_BYTES .. " bytes"
	end
	local t, err = parse_table(text or "")
	if not t then
		return nil, "table " .. path .. " ignored: " .. err
	end
	if t.generated - now > t.max_age then
		return nil, "table " .. path .. " ignored: generated " .. (t.generated - now) .. " s in the future (max_age " .. t.max_age .. ")"
	end
	t.path = path
	return t
end

-- current_table returns the table, or nil and why there is none; a read is
-- reused for REREAD_SECONDS. Of the places it looks, the table serve
-- generated last wins: a table left behind in one place (an old install's,
-- another serve's) must not hide the one serve keeps writing in another.
-- Which table is used, and why none is, is logged at info each time it
-- changes, so an admin sees in slurmctld's log why no job is rewritten.
local function current_table(now)
	-- A clock set back must not keep the last read for as long.
	if cache.read_at and now >= cache.read_at and now - cache.read_at < REREAD_SECONDS then
		return cache.tbl, cache.why
	end
	cache.read_at, cache.tbl, cache.why = now, nil, nil
	local best, whys = nil, {}
	for _, p in ipairs(TABLE_PATHS) do
		local t, why = read_table(p, now)
		if t and (not best or t.generated > best.generated) then
			best = t
		elseif why then
			whys[#whys + 1] = why
		end
	end
	local said
	if best then
		cache.tbl = best
		said = "fairway: rewrite table " .. best.path .. " in use"
		if now - best.generated > best.max_age then
			said = "fairway: rewrite table " .. best.path .. " is older than its max_age (is serve running?): jobs left as submitted"
		end
	else
		if #whys == 0 then
			whys[1] = "no table at " .. table.concat(TABLE_PATHS, " or ")
		end
		cache.why = table.concat(whys, "; ")
		said = "fairway: no rewrite table in use (jobs left as submitted): " .. cache.why
	end
	if said ~= cache.logged then
		cache.logged = said
		pcall(slurm.log_info, "%s", said)
	end
	return cache.tbl, cache.why
end

-- SIZE_SUFFIXES are the suffixes Slurm multiplies a GRES count by
-- (suffix_mult, any case).
local SIZE_SUFFIXES = { k = true, kib = true, kb = true, m = true, mib = true, mb = true, g = true, gib = true, gb = true,
	t = true, tib = true, tb = true, p = true, pib = true, pb = true }

-- one_gpu reads a tres_per_* string that asks for exactly one gpu and
-- nothing else and returns true, the type ("" when untyped) and the prefix
-- the release spells GRES with. Slurm reads name[:type][:count], a missing
-- count meaning 1. Releases differ in the prefix, and each one's parser
-- accepts only its own: 22.05 passes "gres:gpu:1" and rejects a request of
-- "gres/shard:1", 26.05 passes "gres/gpu:1" and rejects "gres:shard:1"
-- ("Invalid Trackable RESource (TRES) specification"). A request without
-- either prefix is not recognised, so the rewrite always writes the form
-- the job came with. A count is what Slurm reads as one (_is_valid_number:
-- decimal digits, then a size suffix): "1k" is 1024 GPUs, not a type, and
-- tonumber's "0x1", "1e0", "1.0" or " 1" are invalid GRES to Slurm (Lua 5.3
-- even reads "0x10000000000000001" as 1); an empty type or count ("gpu:",
-- "gpu::1") is invalid to Slurm too.
local function one_gpu(spec)
	if type(spec) ~= "string" or spec == "" or #spec > MAX_SPEC_BYTES or spec:find(",", 1, true) then
		return false
	end
	local prefix = spec:match("^gres[:/]")
	if not prefix then
		return false
	end
	local s = spec:sub(#prefix + 1)
	local f = {}
	for field in (s .. ":"):gmatch("([^:]*):") do
		f[#f + 1] = field
	end
	if f[1] ~= "gpu" or #f > 3 or f[2] == "" then
		return false
	end
	local typ, count = "", 1
	if #f == 2 then
		local digits, suffix = f[2]:match("^(%d+)(%a*)$")
		if digits and suffix == "" then
			count = tonumber(digits)
		elseif digits and SIZE_SUFFIXES[suffix:lower()] then
			return false
		else
			typ = f[2]
		end
	elseif #f == 3 then
		typ, count = f[2], f[3]:match("^%d+$") and tonumber(f[3])
	end
	if count ~= 1 or typ:find("[^%w_.-]") then
		return false
	end
	return true, typ, prefix
end

-- cpus_only reports whether a tres_per_task string asks for CPUs and
-- nothing else: 26.05 passes `-c N` as "cpu=N" there (22.05 leaves it
-- empty and sets cpus_per_task only), which must not keep the job from
-- being shared. A GPU per task ("gres/gpu=1", --gpus-per-task) is not.
local function cpus_only(spec)
	if spec == nil or spec == "" then
		return true
	end
	if type(spec) ~= "string" or #spec > MAX_SPEC_BYTES then
		return false
	end
	for entry in (spec .. ","):gmatch("([^,]*),") do
		if not entry:match("^cpu[=:]%d+$") then
			return false
		end
	end
	return true
end

local function empty(v)
	return v == nil or v == ""
end

local function single_node(job_desc)
	local lo, hi = job_desc.min_nodes, job_desc.max_nodes
	local function ok(v)
		return v == nil or v == NO_VAL or v <= 1
	end
	return ok(lo) and ok(hi)
end

-- one_place reports whether a job at most one node long by its node counts
-- stays on one node whatever else it says. --gpus=1 is one GPU for the
-- whole job, and the shards it becomes are per node: a job of 8 tasks one
-- per node, or on two named nodes (--nodelist), leaves its node counts
-- unset yet runs on several, and would get the shards on each. So more
-- than one task, more CPUs than one task's (minimum_cpus through
-- slurmrestd or a raw RPC sizes the job as -n does, without a task count),
-- or more than one required node keeps it as submitted.
local function one_place(job_desc)
	local n, req = job_desc.num_tasks, job_desc.req_nodes
	if not (n == nil or n == NO_VAL or n <= 1) then
		return false
	end
	local cpus, per_task = job_desc.min_cpus, job_desc.cpus_per_task
	if per_task == nil or per_task == NO_VAL16 or per_task < 1 then
		per_task = 1
	end
	if not (cpus == nil or cpus == NO_VAL or cpus <= per_task) then
		return false
	end
	return empty(req) or (type(req) == "string" and #req <= MAX_SPEC_BYTES and not req:find("[^%w_.-]"))
end

-- partitions_of returns the partitions a job goes to: its own list, or the
-- default partition.
local function partitions_of(job_desc, part_list)
	local out = {}
	if not empty(job_desc.partition) then
		for p in job_desc.partition:gmatch("[^,]+") do
			out[#out + 1] = p
		end
		return out
	end
	if type(part_list) == "table" then
		for _, part in pairs(part_list) do
			if part.flag_default == 1 and part.name then
				out[1] = part.name
				return out
			end
		end
	end
	return out
end

local function rewrite(job_desc, part_list, submit_uid)
	-- An elastic job (fairway:elastic=MIN-MAX) declared it runs on whole
	-- GPUs; serve sizes it, and shards could not be turned back into GPUs.
	local comment = job_desc.comment
	if not empty(comment) and (comment:find(OPT_OUT, 1, true) or comment:find(ELASTIC, 1, true)) then
		return
	end
	-- Only a request for exactly one whole GPU, through one field.
	local via, typ, prefix
	local node_gpu, node_typ, node_prefix = one_gpu(job_desc.tres_per_node)
	local job_gpu, job_typ, job_prefix = one_gpu(job_desc.tres_per_job)
	if node_gpu and empty(job_desc.tres_per_job) then
		via, typ, prefix = "tres_per_node", node_typ, node_prefix
	elseif job_gpu and empty(job_desc.tres_per_node) then
		via, typ, prefix = "tres_per_job", job_typ, job_prefix
	else
		return
	end
	-- CPUs, memory or tasks per GPU (--cpus-per-gpu, --mem-per-gpu,
	-- --ntasks-per-gpu) and a GPU frequency (--gpu-freq) name the gpu
	-- request the rewrite removes: such a job is left as submitted. Slurm
	-- turns --ntasks-per-gpu without a gpu request into tasks/N whole GPUs
	-- on top of the shards (or rejects the job), and rejects shards with a
	-- GPU frequency (gres_job_state_validate, both releases).
	local tasks_per_gpu, freq = job_desc.ntasks_per_tres, job_desc.tres_freq
	if not cpus_only(job_desc.tres_per_task) or not empty(job_desc.tres_per_socket) or
		not empty(job_desc.cpus_per_tres) or not empty(job_desc.mem_per_tres) or not single_node(job_desc) or
		not (tasks_per_gpu == nil or tasks_per_gpu == NO_VAL16 or tasks_per_gpu == 0) or
		(not empty(freq) and freq:find("gpu", 1, true)) then
		return
	end
	if via == "tres_per_job" and not one_place(job_desc) then
		return
	end
	local user, name = job_desc.user_name, job_desc.name
	if empty(user) or empty(name) then
		return
	end
	local now = os.time()
	local t, why = current_table(now)
	if not t then
		return
	end
	if now - t.generated > t.max_age then
		slurm.log_debug("fairway: rewrite table is %d s old (max %d): job of %s left as submitted", now - t.generated, t.max_age, user)
		return
	end
	local parts = partitions_of(job_desc, part_list)
	if #parts == 0 then
		return
	end
	for _, p in ipairs(parts) do
		if not t.partitions[p] then
			return
		end
	end
	local shards = t.shards[user .. "\t" .. name]
	if not shards then
		return
	end
	local before = job_desc[via]
	local want = prefix .. "shard:" .. shards
	if typ ~= "" then
		want = prefix .. "shard:" .. typ .. ":" .. shards
	end
	if via == "tres_per_job" then
		job_desc.tres_per_job = ""
	end
	job_desc.tres_per_node = want
	slurm.log_info("fairway: job %s of %s: %s %s -> tres_per_node %s (history of jobs with this name)",
		name, user, via, tostring(before), want)
	slurm.log_user("%s", "fairway: your jobs named '" .. name .. "' used a small part of their GPU, so this one gets " ..
		shards .. " GPU shard(s) instead of a whole GPU; add --comment=" .. OPT_OUT .. " to opt out")
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	local ok, err = pcall(rewrite, job_desc, part_list, submit_uid)
	if not ok then
		pcall(slurm.log_error, "fairway: job_submit.lua: %s (job left as submitted)", tostring(err))
	end
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end
