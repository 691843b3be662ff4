// The job flow of wlmclient run (and the short wlmclient info): submit a job,
// watch it with JobStates and JobInfo until it completes, stream its output
// with OpenFile, then submit a held job and cancel it. Every rpc is one of
// proto/wlm.proto's, called with the original rpc names and messages.
package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"wlmvk/contract/api"
)

// defaultScript is the job run when -script is not given.
const defaultScript = "#!/bin/sh\n#SBATCH --cpus-per-task=1\necho start\nsleep 2\necho done\n"

// heldScript is the second job: submitted held, so it stays PENDING until cancelled.
const heldScript = "#!/bin/sh\n#SBATCH --cpus-per-task=1\n#SBATCH --hold\necho never\n"

const pollEvery = 200 * time.Millisecond

// terminal is every status after which a job does not change again.
var terminal = map[api.JobStatus]bool{
	api.JobStatus_COMPLETED: true, api.JobStatus_CANCELLED: true, api.JobStatus_FAILED: true,
	api.JobStatus_TIMEOUT: true, api.JobStatus_NODE_FAIL: true, api.JobStatus_OUT_OF_MEMORY: true,
	api.JobStatus_PREEMPTED: true, api.JobStatus_BOOT_FAIL: true, api.JobStatus_DEADLINE: true,
	api.JobStatus_NOT_FOUND: true,
}

func infoFlow(ctx context.Context, c api.WorkloadManagerClient) {
	info, err := c.WorkloadInfo(ctx, &api.WorkloadInfoRequest{})
	if err != nil {
		fail("workload_info", err)
	}
	emit("workload_info", line{
		"name": info.GetName(), "version": info.GetVersion(), "uid": info.GetUid(),
		"cluster_name": info.GetClusterName(), "extensions": info.GetExtensions(),
	})
	parts, err := c.Partitions(ctx, &api.PartitionsRequest{})
	if err != nil {
		fail("partitions", err)
	}
	emit("partitions", line{"partitions": parts.GetPartition()})
}

func runFlow(ctx context.Context, c api.WorkloadManagerClient, script, partition string) {
	infoFlow(ctx, c)

	submitted, err := c.SubmitJob(ctx, &api.SubmitJobRequest{Script: script, Partition: partition})
	if err != nil {
		fail("submit", err)
	}
	id := submitted.GetJobId()
	emit("submit", line{"job_id": id})

	done := watch(ctx, c, id, func(s api.JobStatus) bool { return terminal[s] })
	emit("job_info", line{
		"job_id": id, "id": done.GetId(), "status": done.GetStatus().String(),
		"exit_code": done.GetExitCode(), "partition": done.GetPartition(),
		"working_dir": done.GetWorkingDir(), "std_out": done.GetStdOut(),
	})

	content, chunks := openFile(ctx, c, done.GetStdOut())
	emit("open_file", line{
		"path": done.GetStdOut(), "chunks": chunks, "bytes": len(content), "content": content,
	})

	held, err := c.SubmitJob(ctx, &api.SubmitJobRequest{Script: heldScript, Partition: partition})
	if err != nil {
		fail("submit_held", err)
	}
	heldID := held.GetJobId()
	emit("submit_held", line{"job_id": heldID})
	pending := watch(ctx, c, heldID, func(s api.JobStatus) bool { return s == api.JobStatus_PENDING })
	emit("held", line{"job_id": heldID, "status": pending.GetStatus().String(), "reason": pending.GetReason()})

	if _, err := c.CancelJob(ctx, &api.CancelJobRequest{JobId: heldID}); err != nil {
		fail("cancel", err)
	}
	emit("cancel", line{"job_id": heldID})
	cancelled := watch(ctx, c, heldID, func(s api.JobStatus) bool { return terminal[s] })
	emit("cancelled", line{"job_id": heldID, "status": cancelled.GetStatus().String()})
}

// watch polls JobStates (wlmvk's batched rpc) and JobInfo (the original one)
// until the statuses of both satisfy until (the two calls are a moment apart:
// one may still say COMPLETING when the next says COMPLETED), printing a line
// each time either status changes; it returns the last JobInfo.
func watch(ctx context.Context, c api.WorkloadManagerClient, id int64, until func(api.JobStatus) bool) *api.JobInfo {
	lastState, lastInfo := api.JobStatus(-1), api.JobStatus(-1)
	for {
		states, err := c.JobStates(ctx, &api.JobStatesRequest{JobIds: []int64{id}})
		if err != nil {
			fail("job_states", err)
		}
		if n := len(states.GetStates()); n != 1 {
			fail("job_states", fmt.Errorf("job %d: %d states in the reply, want 1", id, n))
		}
		state := states.GetStates()[0]
		if state.GetJobId() != id {
			fail("job_states", fmt.Errorf("asked for job %d, got job %d", id, state.GetJobId()))
		}
		if state.GetStatus() != lastState {
			lastState = state.GetStatus()
			emit("state", line{"rpc": "JobStates", "job_id": id, "status": lastState.String(), "reason": state.GetReason()})
		}
		infos, err := c.JobInfo(ctx, &api.JobInfoRequest{JobId: id})
		if err != nil {
			fail("job_info", err)
		}
		if len(infos.GetInfo()) == 0 {
			fail("job_info", fmt.Errorf("job %d: empty JobInfoResponse", id))
		}
		info := infos.GetInfo()[0]
		if info.GetStatus() != lastInfo {
			lastInfo = info.GetStatus()
			emit("state", line{"rpc": "JobInfo", "job_id": id, "status": lastInfo.String(), "reason": info.GetReason()})
		}
		if until(state.GetStatus()) && until(info.GetStatus()) {
			return info
		}
		select {
		case <-ctx.Done():
			fail("watch", fmt.Errorf("job %d still %s: %w", id, lastInfo, ctx.Err()))
		case <-time.After(pollEvery):
		}
	}
}

// openFile streams a file through OpenFile and returns its bytes and the number of chunks.
func openFile(ctx context.Context, c api.WorkloadManagerClient, path string) ([]byte, int) {
	stream, err := c.OpenFile(ctx, &api.OpenFileRequest{Path: path})
	if err != nil {
		fail("open_file", err)
	}
	var content []byte
	chunks := 0
	for {
		chunk, err := stream.Recv()
		if err == io.EOF {
			return content, chunks
		}
		if err != nil {
			fail("open_file", err)
		}
		chunks++
		content = append(content, chunk.GetContent()...)
	}
}
