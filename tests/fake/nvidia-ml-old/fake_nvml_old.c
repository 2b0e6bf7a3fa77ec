/* The fake NVML as an old driver's library: only the unversioned symbols, 16-byte
 * process records, no memory v2, no energy counter, no GPM (see ../nvidia-ml). */
#define FAKE_NVML_LEGACY 1
#include "../nvidia-ml/fake_nvml.c"
