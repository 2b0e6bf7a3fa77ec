/* The subset of NVML carma uses, declared here because Debian main ships no
 * nvml.h. Layouts and values follow NVIDIA's public nvml.h (CUDA 12); every struct
 * size is checked below, because a wrong size corrupts memory silently. Only
 * src/gpu/nvml.c and the fake library in tests/fake/nvidia-ml include this file.
 * (The typedef'd names mirror NVIDIA's on purpose, so the declarations can be
 * compared line by line with theirs.) */
#ifndef CARMA_GPU_NVML_API_H
#define CARMA_GPU_NVML_API_H

#include <stddef.h>

typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_VGPU_ECC_NOT_ENABLED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef struct nvmlDevice_st *nvmlDevice_t;

#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
/* usedGpuMemory when the driver cannot tell (WDDM, some containers). */
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)

/* nvmlDeviceGetMemoryInfo (v1). */
typedef struct nvmlMemory_st {
    unsigned long long total, free, used;
} nvmlMemory_t;

/* nvmlDeviceGetMemoryInfo_v2: total = reserved + free + used. */
typedef struct nvmlMemory_v2_st {
    unsigned int version; /* nvmlMemory_v2 */
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
#define NVML_STRUCT_VERSION_OF(size, ver) ((unsigned int)(size) | ((unsigned int)(ver) << 24U))
#define nvmlMemory_v2 NVML_STRUCT_VERSION_OF(sizeof(nvmlMemory_v2_t), 2)

typedef struct nvmlUtilization_st {
    unsigned int gpu;    /* percent of time a kernel was running */
    unsigned int memory; /* percent of time device memory was read or written */
} nvmlUtilization_t;

/* nvmlDeviceGetComputeRunningProcesses (no suffix). */
typedef struct nvmlProcessInfo_v1_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

/* nvmlDeviceGetComputeRunningProcesses_v2 and _v3 (same layout). */
typedef struct nvmlProcessInfo_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;     /* MIG: 0xFFFFFFFF when not in MIG mode */
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef enum nvmlValueType_enum {
    NVML_VALUE_TYPE_DOUBLE = 0,
    NVML_VALUE_TYPE_UNSIGNED_INT = 1,
    NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
    NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
    NVML_VALUE_TYPE_SIGNED_INT = 5,
    NVML_VALUE_TYPE_COUNT
} nvmlValueType_t;

typedef union nvmlValue_st {
    double dVal;
    int siVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
    unsigned short usVal;
} nvmlValue_t;

/* nvmlDeviceGetSamples. */
typedef struct nvmlSample_st {
    unsigned long long timeStamp; /* CPU timestamp, microseconds */
    nvmlValue_t sampleValue;
} nvmlSample_t;

/* nvmlDeviceGetFieldValues. */
typedef struct nvmlFieldValue_st {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;   /* microseconds since 1970 */
    long long latencyUsec;
    nvmlValueType_t valueType;
    nvmlReturn_t nvmlReturn; /* per field; the value is valid only on NVML_SUCCESS */
    nvmlValue_t value;
} nvmlFieldValue_t;

#define NVML_DEVICE_MIG_DISABLE 0
#define NVML_DEVICE_MIG_ENABLE 1

/* GPM (GPU performance monitoring, Hopper and newer): two samples taken some time
 * apart give the metrics averaged between them. */
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

typedef enum nvmlGpmMetricId_enum {
    NVML_GPM_METRIC_GRAPHICS_UTIL = 1,   /* like DCGM GRACT, percent */
    NVML_GPM_METRIC_SM_UTIL = 2,         /* like SMACT */
    NVML_GPM_METRIC_SM_OCCUPANCY = 3,    /* like SMOCC */
    NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5, /* like TENSOR */
    NVML_GPM_METRIC_DRAM_BW_UTIL = 10    /* like DRAMA */
} nvmlGpmMetricId_t;

typedef struct {
    char *shortName;
    char *longName;
    char *unit;
} nvmlGpmMetricInfo_t;

typedef struct {
    unsigned int metricId;
    nvmlReturn_t nvmlReturn;
    double value; /* percent for the *_UTIL metrics */
    nvmlGpmMetricInfo_t metricInfo;
} nvmlGpmMetric_t;

/* NVIDIA's header sizes metrics[] by NVML_GPM_METRIC_MAX, which grew between
 * releases (98, 210, 333); the library reads numMetrics entries only. carma asks
 * for at most 8, and allocates the largest known size so that no release can
 * write past it. */
#define NVML_GPM_METRIC_MAX 333
#define NVML_GPM_METRICS_GET_VERSION 1
typedef struct nvmlGpmMetricsGet_st {
    unsigned int version;
    unsigned int numMetrics;
    nvmlGpmSample_t sample1;
    nvmlGpmSample_t sample2;
    nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

#define NVML_GPM_SUPPORT_VERSION 1
typedef struct nvmlGpmSupport_st {
    unsigned int version;
    unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

/* PCI location (nvmlDeviceGetPciInfo_v3, _v2: busId "00000000:00:06.0", an 8-digit
 * domain). The unversioned nvmlDeviceGetPciInfo of old drivers fills an older layout
 * of 52 bytes whose first 16 hold the bus id ("0000:00:06.0", busIdLegacy here) and
 * whose numbers sit where these do. */
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
typedef struct nvmlPciInfo_st {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

/* Events (nvmlEventSet*): carma registers for critical Xid errors only. */
typedef struct nvmlEventSet_st *nvmlEventSet_t;
#define nvmlEventTypeXidCriticalError 0x0000000000000008ULL

/* What nvmlEventSetWait_v2 fills. The unversioned nvmlEventSetWait of older
 * drivers writes the first 24 bytes only (no instance ids). eventData is the Xid
 * for an Xid event, 999 for one the driver does not know. */
typedef struct nvmlEventData_st {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData;
    unsigned int gpuInstanceId; /* MIG: 0xFFFFFFFF when not attributable */
    unsigned int computeInstanceId;
} nvmlEventData_t;

/* nvmlDeviceGetTopologyCommonAncestor: the closest common ancestor of two GPUs. The
 * values are spaced for levels NVIDIA may add: any other value is one carma does not
 * know. */
typedef enum nvmlGpuLevel_enum {
    NVML_TOPOLOGY_INTERNAL = 0,    /* one board (e.g. Tesla K80) */
    NVML_TOPOLOGY_SINGLE = 10,     /* through one PCIe switch */
    NVML_TOPOLOGY_MULTIPLE = 20,   /* through several PCIe switches, no host bridge */
    NVML_TOPOLOGY_HOSTBRIDGE = 30, /* through one host bridge */
    NVML_TOPOLOGY_NODE = 40,       /* one NUMA node, several host bridges (was _CPU) */
    NVML_TOPOLOGY_SYSTEM = 50      /* across NUMA nodes (SMP interconnect) */
} nvmlGpuTopologyLevel_t;

/* nvmlDeviceGetP2PStatus: which capability is asked about (only NVLink here), and the
 * answer (OK: the pair can; 1..6 say why not). */
typedef enum nvmlGpuP2PCapsIndex_enum { NVML_P2P_CAPS_INDEX_NVLINK = 2 } nvmlGpuP2PCapsIndex_t;
typedef enum nvmlGpuP2PStatus_enum {
    NVML_P2P_STATUS_OK = 0,
    NVML_P2P_STATUS_NOT_SUPPORTED = 5
} nvmlGpuP2PStatus_t;

/* The sizes NVIDIA's ABI has. */
_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t is 24 bytes");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t is 40 bytes");
_Static_assert(nvmlMemory_v2 == 0x02000028, "nvmlMemory_v2 version is 0x02000028");
_Static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t is 8 bytes");
_Static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "process info v1 is 16 bytes");
_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "process info v2/v3 is 24 bytes");
_Static_assert(offsetof(nvmlProcessInfo_t, usedGpuMemory) == 8, "usedGpuMemory at 8");
_Static_assert(sizeof(nvmlValue_t) == 8, "nvmlValue_t is 8 bytes");
_Static_assert(sizeof(nvmlSample_t) == 16, "nvmlSample_t is 16 bytes");
_Static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t is 40 bytes");
_Static_assert(offsetof(nvmlFieldValue_t, value) == 32, "nvmlFieldValue_t.value at 32");
_Static_assert(sizeof(nvmlGpmMetric_t) == 40, "nvmlGpmMetric_t is 40 bytes");
_Static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24, "GPM metrics[] at 24");
_Static_assert(sizeof(nvmlGpmSupport_t) == 8, "nvmlGpmSupport_t is 8 bytes");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t is 68 bytes");
_Static_assert(offsetof(nvmlPciInfo_t, busId) == 36, "nvmlPciInfo_t.busId at 36");
_Static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t is 32 bytes");
_Static_assert(offsetof(nvmlEventData_t, eventData) == 16, "nvmlEventData_t.eventData at 16");
/* enums the library writes through a pointer or takes by value: int-sized, as NVIDIA's */
_Static_assert(sizeof(nvmlGpuTopologyLevel_t) == 4, "nvmlGpuTopologyLevel_t is 4 bytes");
_Static_assert(sizeof(nvmlGpuP2PCapsIndex_t) == 4, "nvmlGpuP2PCapsIndex_t is 4 bytes");
_Static_assert(sizeof(nvmlGpuP2PStatus_t) == 4, "nvmlGpuP2PStatus_t is 4 bytes");

/* Function types, by the symbol that carries them. */
typedef nvmlReturn_t (*nvml_init_fn)(void);         /* nvmlInit_v2, nvmlInit */
typedef nvmlReturn_t (*nvml_shutdown_fn)(void);     /* nvmlShutdown */
typedef const char *(*nvml_error_string_fn)(nvmlReturn_t); /* nvmlErrorString */
typedef nvmlReturn_t (*nvml_driver_version_fn)(char *, unsigned int); /* nvmlSystemGetDriverVersion */
typedef nvmlReturn_t (*nvml_count_fn)(unsigned int *); /* nvmlDeviceGetCount_v2, nvmlDeviceGetCount */
typedef nvmlReturn_t (*nvml_handle_fn)(unsigned int, nvmlDevice_t *); /* ..HandleByIndex_v2, .. */
typedef nvmlReturn_t (*nvml_pci_fn)(nvmlDevice_t, nvmlPciInfo_t *);   /* GetPciInfo_v3, _v2, v1 */
typedef nvmlReturn_t (*nvml_string_fn)(nvmlDevice_t, char *, unsigned int); /* GetName, GetUUID */
typedef nvmlReturn_t (*nvml_memory_fn)(nvmlDevice_t, nvmlMemory_t *);
typedef nvmlReturn_t (*nvml_memory_v2_fn)(nvmlDevice_t, nvmlMemory_v2_t *);
typedef nvmlReturn_t (*nvml_util_fn)(nvmlDevice_t, nvmlUtilization_t *);
typedef nvmlReturn_t (*nvml_uint_fn)(nvmlDevice_t, unsigned int *); /* PowerUsage, limits */
typedef nvmlReturn_t (*nvml_ull_fn)(nvmlDevice_t, unsigned long long *); /* TotalEnergyConsumption */
typedef nvmlReturn_t (*nvml_mig_mode_fn)(nvmlDevice_t, unsigned int *, unsigned int *);
typedef nvmlReturn_t (*nvml_procs_fn)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
typedef nvmlReturn_t (*nvml_procs_v1_fn)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v1_t *);
typedef nvmlReturn_t (*nvml_gpm_support_fn)(nvmlDevice_t, nvmlGpmSupport_t *);
typedef nvmlReturn_t (*nvml_gpm_alloc_fn)(nvmlGpmSample_t *);
typedef nvmlReturn_t (*nvml_gpm_free_fn)(nvmlGpmSample_t);
typedef nvmlReturn_t (*nvml_gpm_sample_get_fn)(nvmlDevice_t, nvmlGpmSample_t);
typedef nvmlReturn_t (*nvml_gpm_metrics_get_fn)(nvmlGpmMetricsGet_t *);
typedef nvmlReturn_t (*nvml_event_set_create_fn)(nvmlEventSet_t *);
typedef nvmlReturn_t (*nvml_event_set_free_fn)(nvmlEventSet_t);
/* nvmlDeviceGetSupportedEventTypes */
typedef nvmlReturn_t (*nvml_event_types_fn)(nvmlDevice_t, unsigned long long *);
/* nvmlDeviceRegisterEvents */
typedef nvmlReturn_t (*nvml_register_events_fn)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
/* nvmlEventSetWait_v2, nvmlEventSetWait: NVML_ERROR_TIMEOUT when nothing came */
typedef nvmlReturn_t (*nvml_event_wait_fn)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
/* nvmlDeviceGetTopologyCommonAncestor */
typedef nvmlReturn_t (*nvml_topology_fn)(nvmlDevice_t, nvmlDevice_t, nvmlGpuTopologyLevel_t *);
/* nvmlDeviceGetP2PStatus */
typedef nvmlReturn_t (*nvml_p2p_status_fn)(nvmlDevice_t, nvmlDevice_t, nvmlGpuP2PCapsIndex_t,
                                           nvmlGpuP2PStatus_t *);

#endif
