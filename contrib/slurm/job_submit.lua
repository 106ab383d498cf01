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
  * Only a request for exactly one GPU (--gres=gpu[:type]:1 or
    --gpus=[type:]1, nothing else in the GRES request, at most one node) is
    changed, into --gres=shard[:type]:N on one node.

Settings: the table path is $FAIRWAY_REWRITE_TABLE in slurmctld's environment,
else /var/lib/fairway/fairway-rewrite.table (serve's default: SlurmUser's
state directory, mode 0640, so /etc/slurm stays read-only to SlurmUser and
other users cannot read the table), else, for tables written before that
default, fairway-rewrite.table in slurm.conf's directory ($SLURM_CONF's, else
/etc/slurm). A table larger than MAX_TABLE_BYTES is ignored: it is read on
slurmctld's submit path. Install: copy this file next to slurm.conf (slurmctld loads
job_submit.lua from there), set JobSubmitPlugins=lua, `scontrol reconfigure`.
See INSTALL.md, "GPU sharing and resource rewriting".

Table format (written atomically by serve; one record per line, fields
separated by one tab; lines starting with # are comments):
  fairway-rewrite<TAB>1
  generated<TAB><unix seconds>
  max_age<TAB><seconds>
  partition<TAB><name>                  (one line per enabled partition)
  shard<TAB><user><TAB><shards><TAB><job name>
]]

local OPT_OUT = "fairway:no-rewrite"
local REREAD_SECONDS = 5 -- how long a read of the table is reused
local MAX_TABLE_BYTES = 4 * 1024 * 1024 -- serve caps its table at 1 MiB by default
local NO_VAL = 4294967294 -- Slurm's NO_VAL for unset 32-bit numbers

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

local cache = { read_at = nil, tbl = nil, why = nil }

-- current_table returns the table, or nil and why there is none; a read is
-- reused for REREAD_SECONDS.
local function current_table(now)
	if cache.read_at and now - cache.read_at < REREAD_SECONDS then
		return cache.tbl, cache.why
	end
	cache.read_at, cache.tbl, cache.why = now, nil, nil
	local fh, path
	for _, p in ipairs(TABLE_PATHS) do
		fh = io.open(p, "r")
		if fh then
			path = p
			break
		end
	end
	if not fh then
		cache.why = "no table at " .. table.concat(TABLE_PATHS, " or ")
		return nil, cache.why
	end
	local text = fh:read(MAX_TABLE_BYTES + 1)
	fh:close()
	if text and #text > MAX_TABLE_BYTES then
		cache.why = "table " .. path .. " ignored: larger than " .. MAX_TABLE_BYTES .. " bytes"
		return nil, cache.why
	end
	local t, err = parse_table(text or "")
	if not t then
		cache.why = "table " .. path .. " ignored: " .. err
		return nil, cache.why
	end
	cache.tbl = t
	return t
end

-- one_gpu reads a tres_per_* string that asks for exactly one gpu and
-- nothing else ("gres:gpu:1", "gres:gpu:h100:1", "gres:gpu:h100", "gpu",
-- "gres/gpu:1") and returns true and the type ("" when untyped). Slurm reads
-- name[:type][:count], a missing count meaning 1.
local function one_gpu(spec)
	if spec == nil or spec == "" or spec:find(",", 1, true) then
		return false
	end
	local s = spec:gsub("^gres[:/]", "")
	local f = {}
	for field in (s .. ":"):gmatch("([^:]*):") do
		f[#f + 1] = field
	end
	if f[1] ~= "gpu" or #f > 3 then
		return false
	end
	local typ, count = "", 1
	if #f == 2 then
		if f[2]:match("^%d+$") then
			count = tonumber(f[2])
		else
			typ = f[2]
		end
	elseif #f == 3 then
		typ, count = f[2], tonumber(f[3])
	end
	if count ~= 1 or typ:find("[^%w_.-]") then
		return false
	end
	return true, typ
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
	local comment = job_desc.comment
	if not empty(comment) and comment:find(OPT_OUT, 1, true) then
		return
	end
	-- Only a request for exactly one whole GPU, through one field.
	local via, typ
	local node_gpu, node_typ = one_gpu(job_desc.tres_per_node)
	local job_gpu, job_typ = one_gpu(job_desc.tres_per_job)
	if node_gpu and empty(job_desc.tres_per_job) then
		via, typ = "tres_per_node", node_typ
	elseif job_gpu and empty(job_desc.tres_per_node) then
		via, typ = "tres_per_job", job_typ
	else
		return
	end
	if not empty(job_desc.tres_per_task) or not empty(job_desc.tres_per_socket) or not single_node(job_desc) then
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
	local want = "gres:shard:" .. shards
	if typ ~= "" then
		want = "gres:shard:" .. typ .. ":" .. shards
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
