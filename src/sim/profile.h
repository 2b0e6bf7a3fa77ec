/* Solo activity profiles: the documented rules that give a workload its SM activity
 * (SMACT), SM occupancy (SMOCC), DRAM activity (DRAMA) and memory ramp when no
 * measurement exists. See docs/model.md for the data each constant comes from. */
#ifndef CARMA_SIM_PROFILE_H
#define CARMA_SIM_PROFILE_H

/* Solo SMACT from the job's peak memory above the smallest footprint of the
 * measurement set it belongs to (`floor_mib`): a saturating curve fitted on the
 * successful runs of GPUMemNet's CNN set (rmse 0.089). Clamped to [0.05, 0.90]. */
float sim_profile_smact(double mem_mib, double floor_mib);

/* SMOCC and DRAMA as fixed ratios of SMACT: the medians of the data we have
 * (GPUMemNet's CNN runs: SMOCC/SMACT 0.40; KACE's three training workloads: memory
 * busy / SM busy 0.464). */
float sim_profile_smocc(float smact);
float sim_profile_drama(float smact);

/* Default warm-up from launch to peak memory, seconds (CARMA's own 30 s grace). */
#define SIM_PROFILE_RAMP_S 30.0f

/* The smallest peak in CARMA's A100 catalog (mobilenet v3 on CIFAR-100, 590 MiB):
 * the floor for workloads measured on that setup. */
#define SIM_PROFILE_CARMA_FLOOR_MIB 590.0

#endif
