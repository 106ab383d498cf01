// Package rewrite holds the resource rewriting rules and the table format
// job_submit.lua reads. Besides ranking, Fairway proposes changes to what a
// pending job asks for, when that makes the cluster fairer and faster:
//
//  1. share: a job that asks for one whole GPU and, by its own history (the
//     same user and job name), uses a small part of it gets shards instead,
//     so that two such jobs run on one GPU (packing, as in Gandiva, Xiao et
//     al., OSDI'18, and Muri's interleaving, Zhao et al., SIGCOMM'22).
//     Slurm 22.05 cannot turn a pending job's gpu request into shards, so
//     this rule is applied at submit time: it yields ShareRules, a table that
//     contrib/slurm/job_submit.lua reads.
//  2. cpus / memory: CPUs and memory in proportion to the GPUs a job holds,
//     Synergy-TUNE style (Mohan et al., "Looking Beyond GPUs for DNN
//     Scheduling on Multi-Tenant Clusters", OSDI'22): the GPU-proportional
//     share by default, less or more only when the job's history shows it
//     needs less or more.
//  3. elastic: a job that declared a GPU range (ElasticMarker) gets the
//     count the AFS-L rule picks (Hwang et al., "Elastic Resource Sharing
//     for Distributed Deep Learning", NSDI'21).
//
// Every proposal says why (Proposal.Reason). The rules are pure: serve
// applies them to Slurm, the simulator to its model of it.
package rewrite
