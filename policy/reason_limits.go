package policy

// Limit and accounting-policy reasons, with Slurm's exact spellings. Each
// constant's name is "Reason" followed by the string squeue prints. The
// TRES-limit family exists per TRES class (cpu, mem, node, energy, GRES,
// license, billing) × limit kind; limitReasonTable maps a (scope, kind,
// class) triple to its constant.
const (
	// ReasonQOSUsageThreshold: the association's fair-share factor is below the QOS's UsageThreshold (QOS flag EnforceUsageThreshold).
	ReasonQOSUsageThreshold Reason = numBaseReasons + iota
	// ReasonInvalidQOS: the job's QOS does not exist or the association may not use it.
	ReasonInvalidQOS
	// ReasonInvalidAccount: the job's account (association) does not exist.
	ReasonInvalidAccount
	// ReasonAccountingPolicy: a limit blocks the job that has no more specific reason (Slurm's fallback).
	ReasonAccountingPolicy
	// ReasonJobArrayTaskLimit: the job array's %throttle of running tasks is reached.
	ReasonJobArrayTaskLimit
	// ReasonReservationDeleted: the reservation the job names no longer exists.
	ReasonReservationDeleted
	// ReasonReservationInvalid: the reservation the job names cannot be used by it (access, or its window has passed).
	ReasonReservationInvalid
	// ReasonPartitionConfig: the job asks for more than the partition's configuration allows per node (e.g. MaxCPUsPerNode).
	ReasonPartitionConfig
	// ReasonQOSJobLimit: a QOS job-count limit without a more specific reason.
	ReasonQOSJobLimit
	// ReasonQOSResourceLimit: a QOS resource limit without a more specific reason (e.g. MaxTRESPerNode on node or license).
	ReasonQOSResourceLimit
	// ReasonQOSTimeLimit: a QOS time limit without a more specific reason.
	ReasonQOSTimeLimit
	// ReasonAssociationJobLimit: an association job-count limit without a more specific reason.
	ReasonAssociationJobLimit
	// ReasonAssociationResourceLimit: an association resource limit without a more specific reason.
	ReasonAssociationResourceLimit
	// ReasonAssociationTimeLimit: an association time limit without a more specific reason.
	ReasonAssociationTimeLimit
	// ReasonJobHoldMaxRequeue: the job was requeued too many times and is held.
	ReasonJobHoldMaxRequeue
	// ReasonQOSGrpJobsLimit: the QOS's GrpJobs limit on running jobs is reached.
	ReasonQOSGrpJobsLimit
	// ReasonQOSGrpSubmitJobsLimit: the QOS's GrpSubmitJobs limit on pending+running jobs is reached.
	ReasonQOSGrpSubmitJobsLimit
	// ReasonQOSGrpWallLimit: the QOS's GrpWall budget of wall-clock minutes is used up.
	ReasonQOSGrpWallLimit
	// ReasonQOSMaxWallDurationPerJobLimit: the job's time limit exceeds the QOS's MaxWall.
	ReasonQOSMaxWallDurationPerJobLimit
	// ReasonQOSMaxJobsPerUserLimit: the user has MaxJobsPerUser jobs running in the QOS.
	ReasonQOSMaxJobsPerUserLimit
	// ReasonQOSMaxSubmitJobPerUserLimit: the user has MaxSubmitJobsPerUser jobs pending or running in the QOS.
	ReasonQOSMaxSubmitJobPerUserLimit
	// ReasonMaxJobsPerAccount: the account has MaxJobsPerAccount jobs running in the QOS.
	ReasonMaxJobsPerAccount
	// ReasonMaxSubmitJobsPerAccount: the account has MaxSubmitJobsPerAccount jobs pending or running in the QOS.
	ReasonMaxSubmitJobsPerAccount
	// ReasonAssocGrpJobsLimit: an association's GrpJobs limit on running jobs of its subtree is reached.
	ReasonAssocGrpJobsLimit
	// ReasonAssocGrpSubmitJobsLimit: an association's GrpSubmitJobs limit on pending+running jobs of its subtree is reached.
	ReasonAssocGrpSubmitJobsLimit
	// ReasonAssocGrpWallLimit: an association's GrpWall budget of wall-clock minutes is used up.
	ReasonAssocGrpWallLimit
	// ReasonAssocMaxJobsLimit: the user association has MaxJobs jobs running.
	ReasonAssocMaxJobsLimit
	// ReasonAssocMaxSubmitJobLimit: the user association has MaxSubmitJobs jobs pending or running.
	ReasonAssocMaxSubmitJobLimit
	// ReasonAssocMaxWallDurationPerJobLimit: the job's time limit exceeds the association's MaxWall.
	ReasonAssocMaxWallDurationPerJobLimit
	// ReasonQOSGrpCpuLimit: the QOS's GrpTRES limit on CPUs would be exceeded by its running jobs plus this one.
	ReasonQOSGrpCpuLimit
	// ReasonQOSGrpMemLimit: the QOS's GrpTRES limit on memory would be exceeded by its running jobs plus this one.
	ReasonQOSGrpMemLimit
	// ReasonQOSGrpNodeLimit: the QOS's GrpTRES limit on nodes would be exceeded by its running jobs plus this one.
	ReasonQOSGrpNodeLimit
	// ReasonQOSGrpEnergy: the QOS's GrpTRES limit on energy would be exceeded by its running jobs plus this one.
	ReasonQOSGrpEnergy
	// ReasonQOSGrpGRES: the QOS's GrpTRES limit on a GRES (e.g. gres/gpu) would be exceeded by its running jobs plus this one.
	ReasonQOSGrpGRES
	// ReasonQOSGrpLicense: the QOS's GrpTRES limit on a license would be exceeded by its running jobs plus this one.
	ReasonQOSGrpLicense
	// ReasonQOSGrpBilling: the QOS's GrpTRES limit on billing would be exceeded by its running jobs plus this one.
	ReasonQOSGrpBilling
	// ReasonQOSGrpCPUMinutesLimit: the QOS's GrpTRESMins budget on CPUs is used up.
	ReasonQOSGrpCPUMinutesLimit
	// ReasonQOSGrpMemoryMinutes: the QOS's GrpTRESMins budget on memory is used up.
	ReasonQOSGrpMemoryMinutes
	// ReasonQOSGrpNodeMinutes: the QOS's GrpTRESMins budget on nodes is used up.
	ReasonQOSGrpNodeMinutes
	// ReasonQOSGrpEnergyMinutes: the QOS's GrpTRESMins budget on energy is used up.
	ReasonQOSGrpEnergyMinutes
	// ReasonQOSGrpGRESMinutes: the QOS's GrpTRESMins budget on a GRES (e.g. gres/gpu) is used up.
	ReasonQOSGrpGRESMinutes
	// ReasonQOSGrpLicenseMinutes: the QOS's GrpTRESMins budget on a license is used up.
	ReasonQOSGrpLicenseMinutes
	// ReasonQOSGrpBillingMinutes: the QOS's GrpTRESMins budget on billing is used up.
	ReasonQOSGrpBillingMinutes
	// ReasonQOSGrpCPURunMinutesLimit: the QOS's GrpTRESRunMins limit on CPUs (TRES × remaining time of running jobs) would be exceeded.
	ReasonQOSGrpCPURunMinutesLimit
	// ReasonQOSGrpMemoryRunMinutes: the QOS's GrpTRESRunMins limit on memory (TRES × remaining time of running jobs) would be exceeded.
	ReasonQOSGrpMemoryRunMinutes
	// ReasonQOSGrpNodeRunMinutes: the QOS's GrpTRESRunMins limit on nodes (TRES × remaining time of running jobs) would be exceeded.
	ReasonQOSGrpNodeRunMinutes
	// ReasonQOSGrpEnergyRunMinutes: the QOS's GrpTRESRunMins limit on energy (TRES × remaining time of running jobs) would be exceeded.
	ReasonQOSGrpEnergyRunMinutes
	// ReasonQOSGrpGRESRunMinutes: the QOS's GrpTRESRunMins limit on a GRES (e.g. gres/gpu) (TRES × remaining time of running jobs) would be exceeded.
	ReasonQOSGrpGRESRunMinutes
	// ReasonQOSGrpLicenseRunMinutes: the QOS's GrpTRESRunMins limit on a license (TRES × remaining time of running jobs) would be exceeded.
	ReasonQOSGrpLicenseRunMinutes
	// ReasonQOSGrpBillingRunMinutes: the QOS's GrpTRESRunMins limit on billing (TRES × remaining time of running jobs) would be exceeded.
	ReasonQOSGrpBillingRunMinutes
	// ReasonQOSMaxCpuPerJobLimit: the job asks more CPUs than the QOS's MaxTRESPerJob allows.
	ReasonQOSMaxCpuPerJobLimit
	// ReasonQOSMaxMemoryPerJob: the job asks more memory than the QOS's MaxTRESPerJob allows.
	ReasonQOSMaxMemoryPerJob
	// ReasonQOSMaxNodePerJobLimit: the job asks more nodes than the QOS's MaxTRESPerJob allows.
	ReasonQOSMaxNodePerJobLimit
	// ReasonQOSMaxEnergyPerJob: the job asks more energy than the QOS's MaxTRESPerJob allows.
	ReasonQOSMaxEnergyPerJob
	// ReasonQOSMaxGRESPerJob: the job asks more a GRES (e.g. gres/gpu) than the QOS's MaxTRESPerJob allows.
	ReasonQOSMaxGRESPerJob
	// ReasonQOSMaxLicensePerJob: the job asks more a license than the QOS's MaxTRESPerJob allows.
	ReasonQOSMaxLicensePerJob
	// ReasonQOSMaxBillingPerJob: the job asks more billing than the QOS's MaxTRESPerJob allows.
	ReasonQOSMaxBillingPerJob
	// ReasonQOSMaxCpuPerNode: the job asks more CPUs per node than the QOS's MaxTRESPerNode allows.
	ReasonQOSMaxCpuPerNode
	// ReasonQOSMaxMemoryPerNode: the job asks more memory per node than the QOS's MaxTRESPerNode allows.
	ReasonQOSMaxMemoryPerNode
	// ReasonQOSMaxEnergyPerNode: the job asks more energy per node than the QOS's MaxTRESPerNode allows.
	ReasonQOSMaxEnergyPerNode
	// ReasonQOSMaxGRESPerNode: the job asks more a GRES (e.g. gres/gpu) per node than the QOS's MaxTRESPerNode allows.
	ReasonQOSMaxGRESPerNode
	// ReasonQOSMaxBillingPerNode: the job asks more billing per node than the QOS's MaxTRESPerNode allows.
	ReasonQOSMaxBillingPerNode
	// ReasonQOSMaxCpuMinutesPerJobLimit: the job's CPUs × time limit exceeds the QOS's MaxTRESMinsPerJob.
	ReasonQOSMaxCpuMinutesPerJobLimit
	// ReasonQOSMaxMemoryMinutesPerJob: the job's memory × time limit exceeds the QOS's MaxTRESMinsPerJob.
	ReasonQOSMaxMemoryMinutesPerJob
	// ReasonQOSMaxNodeMinutesPerJob: the job's nodes × time limit exceeds the QOS's MaxTRESMinsPerJob.
	ReasonQOSMaxNodeMinutesPerJob
	// ReasonQOSMaxEnergyMinutesPerJob: the job's energy × time limit exceeds the QOS's MaxTRESMinsPerJob.
	ReasonQOSMaxEnergyMinutesPerJob
	// ReasonQOSMaxGRESMinutesPerJob: the job's a GRES (e.g. gres/gpu) × time limit exceeds the QOS's MaxTRESMinsPerJob.
	ReasonQOSMaxGRESMinutesPerJob
	// ReasonQOSMaxLicenseMinutesPerJob: the job's a license × time limit exceeds the QOS's MaxTRESMinsPerJob.
	ReasonQOSMaxLicenseMinutesPerJob
	// ReasonQOSMaxBillingMinutesPerJob: the job's billing × time limit exceeds the QOS's MaxTRESMinsPerJob.
	ReasonQOSMaxBillingMinutesPerJob
	// ReasonQOSMaxCpuPerUserLimit: the user's running jobs in the QOS plus this one would exceed the QOS's MaxTRESPerUser on CPUs.
	ReasonQOSMaxCpuPerUserLimit
	// ReasonQOSMaxMemoryPerUser: the user's running jobs in the QOS plus this one would exceed the QOS's MaxTRESPerUser on memory.
	ReasonQOSMaxMemoryPerUser
	// ReasonQOSMaxNodePerUserLimit: the user's running jobs in the QOS plus this one would exceed the QOS's MaxTRESPerUser on nodes.
	ReasonQOSMaxNodePerUserLimit
	// ReasonQOSMaxEnergyPerUser: the user's running jobs in the QOS plus this one would exceed the QOS's MaxTRESPerUser on energy.
	ReasonQOSMaxEnergyPerUser
	// ReasonQOSMaxGRESPerUser: the user's running jobs in the QOS plus this one would exceed the QOS's MaxTRESPerUser on a GRES (e.g. gres/gpu).
	ReasonQOSMaxGRESPerUser
	// ReasonQOSMaxLicensePerUser: the user's running jobs in the QOS plus this one would exceed the QOS's MaxTRESPerUser on a license.
	ReasonQOSMaxLicensePerUser
	// ReasonQOSMaxBillingPerUser: the user's running jobs in the QOS plus this one would exceed the QOS's MaxTRESPerUser on billing.
	ReasonQOSMaxBillingPerUser
	// ReasonMaxCpuPerAccount: the account's running jobs in the QOS plus this one would exceed the QOS's MaxTRESPerAccount on CPUs.
	ReasonMaxCpuPerAccount
	// ReasonMaxMemoryPerAccount: the account's running jobs in the QOS plus this one would exceed the QOS's MaxTRESPerAccount on memory.
	ReasonMaxMemoryPerAccount
	// ReasonMaxNodePerAccount: the account's running jobs in the QOS plus this one would exceed the QOS's MaxTRESPerAccount on nodes.
	ReasonMaxNodePerAccount
	// ReasonMaxEnergyPerAccount: the account's running jobs in the QOS plus this one would exceed the QOS's MaxTRESPerAccount on energy.
	ReasonMaxEnergyPerAccount
	// ReasonMaxGRESPerAccount: the account's running jobs in the QOS plus this one would exceed the QOS's MaxTRESPerAccount on a GRES (e.g. gres/gpu).
	ReasonMaxGRESPerAccount
	// ReasonMaxLicensePerAccount: the account's running jobs in the QOS plus this one would exceed the QOS's MaxTRESPerAccount on a license.
	ReasonMaxLicensePerAccount
	// ReasonMaxBillingPerAccount: the account's running jobs in the QOS plus this one would exceed the QOS's MaxTRESPerAccount on billing.
	ReasonMaxBillingPerAccount
	// ReasonQOSMinCpuNotSatisfied: the job asks fewer CPUs than the QOS's MinTRESPerJob requires.
	ReasonQOSMinCpuNotSatisfied
	// ReasonQOSMinMemory: the job asks fewer memory than the QOS's MinTRESPerJob requires.
	ReasonQOSMinMemory
	// ReasonQOSMinNode: the job asks fewer nodes than the QOS's MinTRESPerJob requires.
	ReasonQOSMinNode
	// ReasonQOSMinEnergy: the job asks fewer energy than the QOS's MinTRESPerJob requires.
	ReasonQOSMinEnergy
	// ReasonQOSMinGRES: the job asks fewer a GRES (e.g. gres/gpu) than the QOS's MinTRESPerJob requires.
	ReasonQOSMinGRES
	// ReasonQOSMinLicense: the job asks fewer a license than the QOS's MinTRESPerJob requires.
	ReasonQOSMinLicense
	// ReasonQOSMinBilling: the job asks fewer billing than the QOS's MinTRESPerJob requires.
	ReasonQOSMinBilling
	// ReasonAssocGrpCpuLimit: the association (or an ancestor)'s GrpTRES limit on CPUs would be exceeded by its running jobs plus this one.
	ReasonAssocGrpCpuLimit
	// ReasonAssocGrpMemLimit: the association (or an ancestor)'s GrpTRES limit on memory would be exceeded by its running jobs plus this one.
	ReasonAssocGrpMemLimit
	// ReasonAssocGrpNodeLimit: the association (or an ancestor)'s GrpTRES limit on nodes would be exceeded by its running jobs plus this one.
	ReasonAssocGrpNodeLimit
	// ReasonAssocGrpEnergy: the association (or an ancestor)'s GrpTRES limit on energy would be exceeded by its running jobs plus this one.
	ReasonAssocGrpEnergy
	// ReasonAssocGrpGRES: the association (or an ancestor)'s GrpTRES limit on a GRES (e.g. gres/gpu) would be exceeded by its running jobs plus this one.
	ReasonAssocGrpGRES
	// ReasonAssocGrpLicense: the association (or an ancestor)'s GrpTRES limit on a license would be exceeded by its running jobs plus this one.
	ReasonAssocGrpLicense
	// ReasonAssocGrpBilling: the association (or an ancestor)'s GrpTRES limit on billing would be exceeded by its running jobs plus this one.
	ReasonAssocGrpBilling
	// ReasonAssocGrpCPUMinutesLimit: the association (or an ancestor)'s GrpTRESMins budget on CPUs is used up.
	ReasonAssocGrpCPUMinutesLimit
	// ReasonAssocGrpMemMinutes: the association (or an ancestor)'s GrpTRESMins budget on memory is used up.
	ReasonAssocGrpMemMinutes
	// ReasonAssocGrpNodeMinutes: the association (or an ancestor)'s GrpTRESMins budget on nodes is used up.
	ReasonAssocGrpNodeMinutes
	// ReasonAssocGrpEnergyMinutes: the association (or an ancestor)'s GrpTRESMins budget on energy is used up.
	ReasonAssocGrpEnergyMinutes
	// ReasonAssocGrpGRESMinutes: the association (or an ancestor)'s GrpTRESMins budget on a GRES (e.g. gres/gpu) is used up.
	ReasonAssocGrpGRESMinutes
	// ReasonAssocGrpLicenseMinutes: the association (or an ancestor)'s GrpTRESMins budget on a license is used up.
	ReasonAssocGrpLicenseMinutes
	// ReasonAssocGrpBillingMinutes: the association (or an ancestor)'s GrpTRESMins budget on billing is used up.
	ReasonAssocGrpBillingMinutes
	// ReasonAssocGrpCPURunMinutesLimit: the association (or an ancestor)'s GrpTRESRunMins limit on CPUs (TRES × remaining time of running jobs) would be exceeded.
	ReasonAssocGrpCPURunMinutesLimit
	// ReasonAssocGrpMemRunMinutes: the association (or an ancestor)'s GrpTRESRunMins limit on memory (TRES × remaining time of running jobs) would be exceeded.
	ReasonAssocGrpMemRunMinutes
	// ReasonAssocGrpNodeRunMinutes: the association (or an ancestor)'s GrpTRESRunMins limit on nodes (TRES × remaining time of running jobs) would be exceeded.
	ReasonAssocGrpNodeRunMinutes
	// ReasonAssocGrpEnergyRunMinutes: the association (or an ancestor)'s GrpTRESRunMins limit on energy (TRES × remaining time of running jobs) would be exceeded.
	ReasonAssocGrpEnergyRunMinutes
	// ReasonAssocGrpGRESRunMinutes: the association (or an ancestor)'s GrpTRESRunMins limit on a GRES (e.g. gres/gpu) (TRES × remaining time of running jobs) would be exceeded.
	ReasonAssocGrpGRESRunMinutes
	// ReasonAssocGrpLicenseRunMinutes: the association (or an ancestor)'s GrpTRESRunMins limit on a license (TRES × remaining time of running jobs) would be exceeded.
	ReasonAssocGrpLicenseRunMinutes
	// ReasonAssocGrpBillingRunMinutes: the association (or an ancestor)'s GrpTRESRunMins limit on billing (TRES × remaining time of running jobs) would be exceeded.
	ReasonAssocGrpBillingRunMinutes
	// ReasonAssocMaxCpuPerJobLimit: the job asks more CPUs than the association (or an ancestor)'s MaxTRESPerJob allows.
	ReasonAssocMaxCpuPerJobLimit
	// ReasonAssocMaxMemPerJob: the job asks more memory than the association (or an ancestor)'s MaxTRESPerJob allows.
	ReasonAssocMaxMemPerJob
	// ReasonAssocMaxNodePerJobLimit: the job asks more nodes than the association (or an ancestor)'s MaxTRESPerJob allows.
	ReasonAssocMaxNodePerJobLimit
	// ReasonAssocMaxEnergyPerJob: the job asks more energy than the association (or an ancestor)'s MaxTRESPerJob allows.
	ReasonAssocMaxEnergyPerJob
	// ReasonAssocMaxGRESPerJob: the job asks more a GRES (e.g. gres/gpu) than the association (or an ancestor)'s MaxTRESPerJob allows.
	ReasonAssocMaxGRESPerJob
	// ReasonAssocMaxLicensePerJob: the job asks more a license than the association (or an ancestor)'s MaxTRESPerJob allows.
	ReasonAssocMaxLicensePerJob
	// ReasonAssocMaxBillingPerJob: the job asks more billing than the association (or an ancestor)'s MaxTRESPerJob allows.
	ReasonAssocMaxBillingPerJob
	// ReasonAssocMaxCpuPerNode: the job asks more CPUs per node than the association (or an ancestor)'s MaxTRESPerNode allows.
	ReasonAssocMaxCpuPerNode
	// ReasonAssocMaxMemPerNode: the job asks more memory per node than the association (or an ancestor)'s MaxTRESPerNode allows.
	ReasonAssocMaxMemPerNode
	// ReasonAssocMaxEnergyPerNode: the job asks more energy per node than the association (or an ancestor)'s MaxTRESPerNode allows.
	ReasonAssocMaxEnergyPerNode
	// ReasonAssocMaxGRESPerNode: the job asks more a GRES (e.g. gres/gpu) per node than the association (or an ancestor)'s MaxTRESPerNode allows.
	ReasonAssocMaxGRESPerNode
	// ReasonAssocMaxBillingPerNode: the job asks more billing per node than the association (or an ancestor)'s MaxTRESPerNode allows.
	ReasonAssocMaxBillingPerNode
	// ReasonAssocMaxCpuMinutesPerJobLimit: the job's CPUs × time limit exceeds the association (or an ancestor)'s MaxTRESMinsPerJob.
	ReasonAssocMaxCpuMinutesPerJobLimit
	// ReasonAssocMaxMemMinutesPerJob: the job's memory × time limit exceeds the association (or an ancestor)'s MaxTRESMinsPerJob.
	ReasonAssocMaxMemMinutesPerJob
	// ReasonAssocMaxNodeMinutesPerJob: the job's nodes × time limit exceeds the association (or an ancestor)'s MaxTRESMinsPerJob.
	ReasonAssocMaxNodeMinutesPerJob
	// ReasonAssocMaxEnergyMinutesPerJob: the job's energy × time limit exceeds the association (or an ancestor)'s MaxTRESMinsPerJob.
	ReasonAssocMaxEnergyMinutesPerJob
	// ReasonAssocMaxGRESMinutesPerJob: the job's a GRES (e.g. gres/gpu) × time limit exceeds the association (or an ancestor)'s MaxTRESMinsPerJob.
	ReasonAssocMaxGRESMinutesPerJob
	// ReasonAssocMaxLicenseMinutesPerJob: the job's a license × time limit exceeds the association (or an ancestor)'s MaxTRESMinsPerJob.
	ReasonAssocMaxLicenseMinutesPerJob
	// ReasonAssocMaxBillingMinutesPerJob: the job's billing × time limit exceeds the association (or an ancestor)'s MaxTRESMinsPerJob.
	ReasonAssocMaxBillingMinutesPerJob
	// ReasonAllocatedIdle: the job was requeued or ended because its GPUs
	// stayed allocated but idle (the scheduler's telemetry idle action,
	// TelemetryConfig in package scheduler). A Sluice extension: Slurm has
	// no such reason. It is not a limit reason; it comes last so that the
	// codes of the others do not change.
	ReasonAllocatedIdle
	numReasons
)

var limitReasonNames = [numReasons - numBaseReasons]string{
	ReasonQOSUsageThreshold - numBaseReasons:               "QOSUsageThreshold",
	ReasonInvalidQOS - numBaseReasons:                      "InvalidQOS",
	ReasonInvalidAccount - numBaseReasons:                  "InvalidAccount",
	ReasonAccountingPolicy - numBaseReasons:                "AccountingPolicy",
	ReasonJobArrayTaskLimit - numBaseReasons:               "JobArrayTaskLimit",
	ReasonReservationDeleted - numBaseReasons:              "ReservationDeleted",
	ReasonReservationInvalid - numBaseReasons:              "ReservationInvalid",
	ReasonPartitionConfig - numBaseReasons:                 "PartitionConfig",
	ReasonQOSJobLimit - numBaseReasons:                     "QOSJobLimit",
	ReasonQOSResourceLimit - numBaseReasons:                "QOSResourceLimit",
	ReasonQOSTimeLimit - numBaseReasons:                    "QOSTimeLimit",
	ReasonAssociationJobLimit - numBaseReasons:             "AssociationJobLimit",
	ReasonAssociationResourceLimit - numBaseReasons:        "AssociationResourceLimit",
	ReasonAssociationTimeLimit - numBaseReasons:            "AssociationTimeLimit",
	ReasonJobHoldMaxRequeue - numBaseReasons:               "JobHoldMaxRequeue",
	ReasonAllocatedIdle - numBaseReasons:                   "AllocatedIdle",
	ReasonQOSGrpJobsLimit - numBaseReasons:                 "QOSGrpJobsLimit",
	ReasonQOSGrpSubmitJobsLimit - numBaseReasons:           "QOSGrpSubmitJobsLimit",
	ReasonQOSGrpWallLimit - numBaseReasons:                 "QOSGrpWallLimit",
	ReasonQOSMaxWallDurationPerJobLimit - numBaseReasons:   "QOSMaxWallDurationPerJobLimit",
	ReasonQOSMaxJobsPerUserLimit - numBaseReasons:          "QOSMaxJobsPerUserLimit",
	ReasonQOSMaxSubmitJobPerUserLimit - numBaseReasons:     "QOSMaxSubmitJobPerUserLimit",
	ReasonMaxJobsPerAccount - numBaseReasons:               "MaxJobsPerAccount",
	ReasonMaxSubmitJobsPerAccount - numBaseReasons:         "MaxSubmitJobsPerAccount",
	ReasonAssocGrpJobsLimit - numBaseReasons:               "AssocGrpJobsLimit",
	ReasonAssocGrpSubmitJobsLimit - numBaseReasons:         "AssocGrpSubmitJobsLimit",
	ReasonAssocGrpWallLimit - numBaseReasons:               "AssocGrpWallLimit",
	ReasonAssocMaxJobsLimit - numBaseReasons:               "AssocMaxJobsLimit",
	ReasonAssocMaxSubmitJobLimit - numBaseReasons:          "AssocMaxSubmitJobLimit",
	ReasonAssocMaxWallDurationPerJobLimit - numBaseReasons: "AssocMaxWallDurationPerJobLimit",
	ReasonQOSGrpCpuLimit - numBaseReasons:                  "QOSGrpCpuLimit",
	ReasonQOSGrpMemLimit - numBaseReasons:                  "QOSGrpMemLimit",
	ReasonQOSGrpNodeLimit - numBaseReasons:                 "QOSGrpNodeLimit",
	ReasonQOSGrpEnergy - numBaseReasons:                    "QOSGrpEnergy",
	ReasonQOSGrpGRES - numBaseReasons:                      "QOSGrpGRES",
	ReasonQOSGrpLicense - numBaseReasons:                   "QOSGrpLicense",
	ReasonQOSGrpBilling - numBaseReasons:                   "QOSGrpBilling",
	ReasonQOSGrpCPUMinutesLimit - numBaseReasons:           "QOSGrpCPUMinutesLimit",
	ReasonQOSGrpMemoryMinutes - numBaseReasons:             "QOSGrpMemoryMinutes",
	ReasonQOSGrpNodeMinutes - numBaseReasons:               "QOSGrpNodeMinutes",
	ReasonQOSGrpEnergyMinutes - numBaseReasons:             "QOSGrpEnergyMinutes",
	ReasonQOSGrpGRESMinutes - numBaseReasons:               "QOSGrpGRESMinutes",
	ReasonQOSGrpLicenseMinutes - numBaseReasons:            "QOSGrpLicenseMinutes",
	ReasonQOSGrpBillingMinutes - numBaseReasons:            "QOSGrpBillingMinutes",
	ReasonQOSGrpCPURunMinutesLimit - numBaseReasons:        "QOSGrpCPURunMinutesLimit",
	ReasonQOSGrpMemoryRunMinutes - numBaseReasons:          "QOSGrpMemoryRunMinutes",
	ReasonQOSGrpNodeRunMinutes - numBaseReasons:            "QOSGrpNodeRunMinutes",
	ReasonQOSGrpEnergyRunMinutes - numBaseReasons:          "QOSGrpEnergyRunMinutes",
	ReasonQOSGrpGRESRunMinutes - numBaseReasons:            "QOSGrpGRESRunMinutes",
	ReasonQOSGrpLicenseRunMinutes - numBaseReasons:         "QOSGrpLicenseRunMinutes",
	ReasonQOSGrpBillingRunMinutes - numBaseReasons:         "QOSGrpBillingRunMinutes",
	ReasonQOSMaxCpuPerJobLimit - numBaseReasons:            "QOSMaxCpuPerJobLimit",
	ReasonQOSMaxMemoryPerJob - numBaseReasons:              "QOSMaxMemoryPerJob",
	ReasonQOSMaxNodePerJobLimit - numBaseReasons:           "QOSMaxNodePerJobLimit",
	ReasonQOSMaxEnergyPerJob - numBaseReasons:              "QOSMaxEnergyPerJob",
	ReasonQOSMaxGRESPerJob - numBaseReasons:                "QOSMaxGRESPerJob",
	ReasonQOSMaxLicensePerJob - numBaseReasons:             "QOSMaxLicensePerJob",
	ReasonQOSMaxBillingPerJob - numBaseReasons:             "QOSMaxBillingPerJob",
	ReasonQOSMaxCpuPerNode - numBaseReasons:                "QOSMaxCpuPerNode",
	ReasonQOSMaxMemoryPerNode - numBaseReasons:             "QOSMaxMemoryPerNode",
	ReasonQOSMaxEnergyPerNode - numBaseReasons:             "QOSMaxEnergyPerNode",
	ReasonQOSMaxGRESPerNode - numBaseReasons:               "QOSMaxGRESPerNode",
	ReasonQOSMaxBillingPerNode - numBaseReasons:            "QOSMaxBillingPerNode",
	ReasonQOSMaxCpuMinutesPerJobLimit - numBaseReasons:     "QOSMaxCpuMinutesPerJobLimit",
	ReasonQOSMaxMemoryMinutesPerJob - numBaseReasons:       "QOSMaxMemoryMinutesPerJob",
	ReasonQOSMaxNodeMinutesPerJob - numBaseReasons:         "QOSMaxNodeMinutesPerJob",
	ReasonQOSMaxEnergyMinutesPerJob - numBaseReasons:       "QOSMaxEnergyMinutesPerJob",
	ReasonQOSMaxGRESMinutesPerJob - numBaseReasons:         "QOSMaxGRESMinutesPerJob",
	ReasonQOSMaxLicenseMinutesPerJob - numBaseReasons:      "QOSMaxLicenseMinutesPerJob",
	ReasonQOSMaxBillingMinutesPerJob - numBaseReasons:      "QOSMaxBillingMinutesPerJob",
	ReasonQOSMaxCpuPerUserLimit - numBaseReasons:           "QOSMaxCpuPerUserLimit",
	ReasonQOSMaxMemoryPerUser - numBaseReasons:             "QOSMaxMemoryPerUser",
	ReasonQOSMaxNodePerUserLimit - numBaseReasons:          "QOSMaxNodePerUserLimit",
	ReasonQOSMaxEnergyPerUser - numBaseReasons:             "QOSMaxEnergyPerUser",
	ReasonQOSMaxGRESPerUser - numBaseReasons:               "QOSMaxGRESPerUser",
	ReasonQOSMaxLicensePerUser - numBaseReasons:            "QOSMaxLicensePerUser",
	ReasonQOSMaxBillingPerUser - numBaseReasons:            "QOSMaxBillingPerUser",
	ReasonMaxCpuPerAccount - numBaseReasons:                "MaxCpuPerAccount",
	ReasonMaxMemoryPerAccount - numBaseReasons:             "MaxMemoryPerAccount",
	ReasonMaxNodePerAccount - numBaseReasons:               "MaxNodePerAccount",
	ReasonMaxEnergyPerAccount - numBaseReasons:             "MaxEnergyPerAccount",
	ReasonMaxGRESPerAccount - numBaseReasons:               "MaxGRESPerAccount",
	ReasonMaxLicensePerAccount - numBaseReasons:            "MaxLicensePerAccount",
	ReasonMaxBillingPerAccount - numBaseReasons:            "MaxBillingPerAccount",
	ReasonQOSMinCpuNotSatisfied - numBaseReasons:           "QOSMinCpuNotSatisfied",
	ReasonQOSMinMemory - numBaseReasons:                    "QOSMinMemory",
	ReasonQOSMinNode - numBaseReasons:                      "QOSMinNode",
	ReasonQOSMinEnergy - numBaseReasons:                    "QOSMinEnergy",
	ReasonQOSMinGRES - numBaseReasons:                      "QOSMinGRES",
	ReasonQOSMinLicense - numBaseReasons:                   "QOSMinLicense",
	ReasonQOSMinBilling - numBaseReasons:                   "QOSMinBilling",
	ReasonAssocGrpCpuLimit - numBaseReasons:                "AssocGrpCpuLimit",
	ReasonAssocGrpMemLimit - numBaseReasons:                "AssocGrpMemLimit",
	ReasonAssocGrpNodeLimit - numBaseReasons:               "AssocGrpNodeLimit",
	ReasonAssocGrpEnergy - numBaseReasons:                  "AssocGrpEnergy",
	ReasonAssocGrpGRES - numBaseReasons:                    "AssocGrpGRES",
	ReasonAssocGrpLicense - numBaseReasons:                 "AssocGrpLicense",
	ReasonAssocGrpBilling - numBaseReasons:                 "AssocGrpBilling",
	ReasonAssocGrpCPUMinutesLimit - numBaseReasons:         "AssocGrpCPUMinutesLimit",
	ReasonAssocGrpMemMinutes - numBaseReasons:              "AssocGrpMemMinutes",
	ReasonAssocGrpNodeMinutes - numBaseReasons:             "AssocGrpNodeMinutes",
	ReasonAssocGrpEnergyMinutes - numBaseReasons:           "AssocGrpEnergyMinutes",
	ReasonAssocGrpGRESMinutes - numBaseReasons:             "AssocGrpGRESMinutes",
	ReasonAssocGrpLicenseMinutes - numBaseReasons:          "AssocGrpLicenseMinutes",
	ReasonAssocGrpBillingMinutes - numBaseReasons:          "AssocGrpBillingMinutes",
	ReasonAssocGrpCPURunMinutesLimit - numBaseReasons:      "AssocGrpCPURunMinutesLimit",
	ReasonAssocGrpMemRunMinutes - numBaseReasons:           "AssocGrpMemRunMinutes",
	ReasonAssocGrpNodeRunMinutes - numBaseReasons:          "AssocGrpNodeRunMinutes",
	ReasonAssocGrpEnergyRunMinutes - numBaseReasons:        "AssocGrpEnergyRunMinutes",
	ReasonAssocGrpGRESRunMinutes - numBaseReasons:          "AssocGrpGRESRunMinutes",
	ReasonAssocGrpLicenseRunMinutes - numBaseReasons:       "AssocGrpLicenseRunMinutes",
	ReasonAssocGrpBillingRunMinutes - numBaseReasons:       "AssocGrpBillingRunMinutes",
	ReasonAssocMaxCpuPerJobLimit - numBaseReasons:          "AssocMaxCpuPerJobLimit",
	ReasonAssocMaxMemPerJob - numBaseReasons:               "AssocMaxMemPerJob",
	ReasonAssocMaxNodePerJobLimit - numBaseReasons:         "AssocMaxNodePerJobLimit",
	ReasonAssocMaxEnergyPerJob - numBaseReasons:            "AssocMaxEnergyPerJob",
	ReasonAssocMaxGRESPerJob - numBaseReasons:              "AssocMaxGRESPerJob",
	ReasonAssocMaxLicensePerJob - numBaseReasons:           "AssocMaxLicensePerJob",
	ReasonAssocMaxBillingPerJob - numBaseReasons:           "AssocMaxBillingPerJob",
	ReasonAssocMaxCpuPerNode - numBaseReasons:              "AssocMaxCpuPerNode",
	ReasonAssocMaxMemPerNode - numBaseReasons:              "AssocMaxMemPerNode",
	ReasonAssocMaxEnergyPerNode - numBaseReasons:           "AssocMaxEnergyPerNode",
	ReasonAssocMaxGRESPerNode - numBaseReasons:             "AssocMaxGRESPerNode",
	ReasonAssocMaxBillingPerNode - numBaseReasons:          "AssocMaxBillingPerNode",
	ReasonAssocMaxCpuMinutesPerJobLimit - numBaseReasons:   "AssocMaxCpuMinutesPerJobLimit",
	ReasonAssocMaxMemMinutesPerJob - numBaseReasons:        "AssocMaxMemMinutesPerJob",
	ReasonAssocMaxNodeMinutesPerJob - numBaseReasons:       "AssocMaxNodeMinutesPerJob",
	ReasonAssocMaxEnergyMinutesPerJob - numBaseReasons:     "AssocMaxEnergyMinutesPerJob",
	ReasonAssocMaxGRESMinutesPerJob - numBaseReasons:       "AssocMaxGRESMinutesPerJob",
	ReasonAssocMaxLicenseMinutesPerJob - numBaseReasons:    "AssocMaxLicenseMinutesPerJob",
	ReasonAssocMaxBillingMinutesPerJob - numBaseReasons:    "AssocMaxBillingMinutesPerJob",
}

// limitReasonTable maps scope × kind × class to a reason; zero entries
// have no Slurm spelling and fall back to the scope's generic reason.
var limitReasonTable = [numScopes][numTRESKinds][numClasses]Reason{
	scopeQOS: {
		kindGrpTRES:           {classCPU: ReasonQOSGrpCpuLimit, classMem: ReasonQOSGrpMemLimit, classNode: ReasonQOSGrpNodeLimit, classEnergy: ReasonQOSGrpEnergy, classGRES: ReasonQOSGrpGRES, classLicense: ReasonQOSGrpLicense, classBilling: ReasonQOSGrpBilling},
		kindGrpTRESMins:       {classCPU: ReasonQOSGrpCPUMinutesLimit, classMem: ReasonQOSGrpMemoryMinutes, classNode: ReasonQOSGrpNodeMinutes, classEnergy: ReasonQOSGrpEnergyMinutes, classGRES: ReasonQOSGrpGRESMinutes, classLicense: ReasonQOSGrpLicenseMinutes, classBilling: ReasonQOSGrpBillingMinutes},
		kindGrpTRESRunMins:    {classCPU: ReasonQOSGrpCPURunMinutesLimit, classMem: ReasonQOSGrpMemoryRunMinutes, classNode: ReasonQOSGrpNodeRunMinutes, classEnergy: ReasonQOSGrpEnergyRunMinutes, classGRES: ReasonQOSGrpGRESRunMinutes, classLicense: ReasonQOSGrpLicenseRunMinutes, classBilling: ReasonQOSGrpBillingRunMinutes},
		kindMaxTRESPerJob:     {classCPU: ReasonQOSMaxCpuPerJobLimit, classMem: ReasonQOSMaxMemoryPerJob, classNode: ReasonQOSMaxNodePerJobLimit, classEnergy: ReasonQOSMaxEnergyPerJob, classGRES: ReasonQOSMaxGRESPerJob, classLicense: ReasonQOSMaxLicensePerJob, classBilling: ReasonQOSMaxBillingPerJob},
		kindMaxTRESPerNode:    {classCPU: ReasonQOSMaxCpuPerNode, classMem: ReasonQOSMaxMemoryPerNode, classEnergy: ReasonQOSMaxEnergyPerNode, classGRES: ReasonQOSMaxGRESPerNode, classBilling: ReasonQOSMaxBillingPerNode},
		kindMaxTRESMinsPerJob: {classCPU: ReasonQOSMaxCpuMinutesPerJobLimit, classMem: ReasonQOSMaxMemoryMinutesPerJob, classNode: ReasonQOSMaxNodeMinutesPerJob, classEnergy: ReasonQOSMaxEnergyMinutesPerJob, classGRES: ReasonQOSMaxGRESMinutesPerJob, classLicense: ReasonQOSMaxLicenseMinutesPerJob, classBilling: ReasonQOSMaxBillingMinutesPerJob},
		kindMaxTRESPerUser:    {classCPU: ReasonQOSMaxCpuPerUserLimit, classMem: ReasonQOSMaxMemoryPerUser, classNode: ReasonQOSMaxNodePerUserLimit, classEnergy: ReasonQOSMaxEnergyPerUser, classGRES: ReasonQOSMaxGRESPerUser, classLicense: ReasonQOSMaxLicensePerUser, classBilling: ReasonQOSMaxBillingPerUser},
		kindMaxTRESPerAccount: {classCPU: ReasonMaxCpuPerAccount, classMem: ReasonMaxMemoryPerAccount, classNode: ReasonMaxNodePerAccount, classEnergy: ReasonMaxEnergyPerAccount, classGRES: ReasonMaxGRESPerAccount, classLicense: ReasonMaxLicensePerAccount, classBilling: ReasonMaxBillingPerAccount},
		kindMinTRESPerJob:     {classCPU: ReasonQOSMinCpuNotSatisfied, classMem: ReasonQOSMinMemory, classNode: ReasonQOSMinNode, classEnergy: ReasonQOSMinEnergy, classGRES: ReasonQOSMinGRES, classLicense: ReasonQOSMinLicense, classBilling: ReasonQOSMinBilling},
	},
	scopeAssoc: {
		kindGrpTRES:           {classCPU: ReasonAssocGrpCpuLimit, classMem: ReasonAssocGrpMemLimit, classNode: ReasonAssocGrpNodeLimit, classEnergy: ReasonAssocGrpEnergy, classGRES: ReasonAssocGrpGRES, classLicense: ReasonAssocGrpLicense, classBilling: ReasonAssocGrpBilling},
		kindGrpTRESMins:       {classCPU: ReasonAssocGrpCPUMinutesLimit, classMem: ReasonAssocGrpMemMinutes, classNode: ReasonAssocGrpNodeMinutes, classEnergy: ReasonAssocGrpEnergyMinutes, classGRES: ReasonAssocGrpGRESMinutes, classLicense: ReasonAssocGrpLicenseMinutes, classBilling: ReasonAssocGrpBillingMinutes},
		kindGrpTRESRunMins:    {classCPU: ReasonAssocGrpCPURunMinutesLimit, classMem: ReasonAssocGrpMemRunMinutes, classNode: ReasonAssocGrpNodeRunMinutes, classEnergy: ReasonAssocGrpEnergyRunMinutes, classGRES: ReasonAssocGrpGRESRunMinutes, classLicense: ReasonAssocGrpLicenseRunMinutes, classBilling: ReasonAssocGrpBillingRunMinutes},
		kindMaxTRESPerJob:     {classCPU: ReasonAssocMaxCpuPerJobLimit, classMem: ReasonAssocMaxMemPerJob, classNode: ReasonAssocMaxNodePerJobLimit, classEnergy: ReasonAssocMaxEnergyPerJob, classGRES: ReasonAssocMaxGRESPerJob, classLicense: ReasonAssocMaxLicensePerJob, classBilling: ReasonAssocMaxBillingPerJob},
		kindMaxTRESPerNode:    {classCPU: ReasonAssocMaxCpuPerNode, classMem: ReasonAssocMaxMemPerNode, classEnergy: ReasonAssocMaxEnergyPerNode, classGRES: ReasonAssocMaxGRESPerNode, classBilling: ReasonAssocMaxBillingPerNode},
		kindMaxTRESMinsPerJob: {classCPU: ReasonAssocMaxCpuMinutesPerJobLimit, classMem: ReasonAssocMaxMemMinutesPerJob, classNode: ReasonAssocMaxNodeMinutesPerJob, classEnergy: ReasonAssocMaxEnergyMinutesPerJob, classGRES: ReasonAssocMaxGRESMinutesPerJob, classLicense: ReasonAssocMaxLicenseMinutesPerJob, classBilling: ReasonAssocMaxBillingMinutesPerJob},
	},
}
