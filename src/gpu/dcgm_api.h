/* The subset of DCGM's C API (dcgm_agent.h, dcgm_structs.h, dcgm_fields.h of DCGM
 * 3.x/4.x) that carma uses, declared here so that no DCGM package is needed at
 * build time. Only src/gpu/dcgm.c and tests/fake/dcgm include this file. Sizes are
 * checked below; the `version` words are MAKE_DCGM_VERSION(struct, ver) =
 * sizeof(struct) | ver << 24, as in DCGM's headers. */
#ifndef CARMA_GPU_DCGM_API_H
#define CARMA_GPU_DCGM_API_H

#include <stdint.h>

typedef int dcgmReturn_t;
#define DCGM_ST_OK 0
#define DCGM_ST_BADPARAM (-1)
#define DCGM_ST_GENERIC_ERROR (-3)
#define DCGM_ST_MEMORY (-4)
#define DCGM_ST_NOT_CONFIGURED (-5)
#define DCGM_ST_NOT_SUPPORTED (-6)
#define DCGM_ST_INIT_ERROR (-7)
#define DCGM_ST_NVML_ERROR (-8)
#define DCGM_ST_PENDING (-9)
#define DCGM_ST_UNINITIALIZED (-10)
#define DCGM_ST_TIMEOUT (-11)
#define DCGM_ST_VER_MISMATCH (-12)
#define DCGM_ST_UNKNOWN_FIELD (-13)
#define DCGM_ST_NO_DATA (-14)
#define DCGM_ST_STALE_DATA (-15)
#define DCGM_ST_NOT_WATCHED (-16)
#define DCGM_ST_NO_PERMISSION (-17)
#define DCGM_ST_GPU_IS_LOST (-18)
#define DCGM_ST_RESET_REQUIRED (-19)
#define DCGM_ST_FUNCTION_NOT_FOUND (-20)
#define DCGM_ST_CONNECTION_NOT_VALID (-21)
#define DCGM_ST_GPU_NOT_SUPPORTED (-22)
#define DCGM_ST_REQUIRES_ROOT (-29)
#define DCGM_ST_MODULE_NOT_LOADED (-33)
#define DCGM_ST_PROFILING_NOT_SUPPORTED (-36)

typedef uintptr_t dcgmHandle_t;
typedef uintptr_t dcgmGpuGrp_t;
typedef uintptr_t dcgmFieldGrp_t;

#define DCGM_MAX_NUM_DEVICES 32   /* DCGM 3/4; carma's buffers hold 64 */
#define DCGM_MAX_STR_LENGTH 256
#define DCGM_MAX_BLOB_LENGTH 4096

typedef enum dcgmGroupType_enum {
    DCGM_GROUP_DEFAULT = 0, /* all the GPUs of the node */
    DCGM_GROUP_EMPTY = 1,
} dcgmGroupType_t;

#define DCGM_FT_DOUBLE 'd'
#define DCGM_FT_INT64 'i'
#define DCGM_FT_STRING 's'

/* Field ids. */
#define DCGM_FI_DEV_NAME 50
#define DCGM_FI_DEV_UUID 54
#define DCGM_FI_PROF_GR_ENGINE_ACTIVE 1001
#define DCGM_FI_PROF_SM_ACTIVE 1002
#define DCGM_FI_PROF_SM_OCCUPANCY 1003
#define DCGM_FI_PROF_PIPE_TENSOR_ACTIVE 1004
#define DCGM_FI_PROF_DRAM_ACTIVE 1005

/* Values at or above these are "blank" markers, not data. */
#define DCGM_FP64_BLANK 140737488355328.0
#define DCGM_INT64_BLANK 0x7ffffffffffffff0LL

typedef struct {
    unsigned int version;
    unsigned int persistAfterDisconnect;
    unsigned int timeoutMs;
    unsigned int addressIsUnixSocket;
} dcgmConnectV2Params_v2;
#define DCGM_MAKE_VERSION(size, ver) ((unsigned int)((size) | ((unsigned long)(ver) << 24U)))
#define dcgmConnectV2Params_version2 DCGM_MAKE_VERSION(sizeof(dcgmConnectV2Params_v2), 2)

typedef struct {
    unsigned int version;
    unsigned short fieldId;
    unsigned short fieldType;
    int status;
    int64_t ts; /* microseconds since 1970 */
    union {
        int64_t i64;
        double dbl;
        char str[DCGM_MAX_STR_LENGTH];
        char blob[DCGM_MAX_BLOB_LENGTH];
    } value;
} dcgmFieldValue_v1;
#define dcgmFieldValue_version1 DCGM_MAKE_VERSION(sizeof(dcgmFieldValue_v1), 1)

_Static_assert(sizeof(dcgmConnectV2Params_v2) == 16, "dcgmConnectV2Params_v2 is 16 bytes");
_Static_assert(dcgmConnectV2Params_version2 == 0x02000010, "connect params version 2");
_Static_assert(sizeof(dcgmFieldValue_v1) == 4120, "dcgmFieldValue_v1 is 4120 bytes");
_Static_assert(dcgmFieldValue_version1 == 0x01001018, "field value version 1");

typedef dcgmReturn_t (*dcgm_init_fn)(void);          /* dcgmInit, dcgmShutdown */
typedef const char *(*dcgm_error_string_fn)(dcgmReturn_t); /* errorString */
typedef dcgmReturn_t (*dcgm_connect_v2_fn)(const char *, dcgmConnectV2Params_v2 *,
                                           dcgmHandle_t *);
typedef dcgmReturn_t (*dcgm_disconnect_fn)(dcgmHandle_t);
typedef dcgmReturn_t (*dcgm_get_devices_fn)(dcgmHandle_t, unsigned int *, int *);
typedef dcgmReturn_t (*dcgm_group_create_fn)(dcgmHandle_t, dcgmGroupType_t, const char *,
                                             dcgmGpuGrp_t *);
typedef dcgmReturn_t (*dcgm_group_destroy_fn)(dcgmHandle_t, dcgmGpuGrp_t);
typedef dcgmReturn_t (*dcgm_field_group_create_fn)(dcgmHandle_t, int, unsigned short *,
                                                   const char *, dcgmFieldGrp_t *);
typedef dcgmReturn_t (*dcgm_field_group_destroy_fn)(dcgmHandle_t, dcgmFieldGrp_t);
typedef dcgmReturn_t (*dcgm_watch_fields_fn)(dcgmHandle_t, dcgmGpuGrp_t, dcgmFieldGrp_t,
                                             long long, double, int);
typedef dcgmReturn_t (*dcgm_unwatch_fields_fn)(dcgmHandle_t, dcgmGpuGrp_t, dcgmFieldGrp_t);
typedef dcgmReturn_t (*dcgm_update_all_fn)(dcgmHandle_t, int);
typedef dcgmReturn_t (*dcgm_latest_values_fn)(dcgmHandle_t, int, unsigned short *, unsigned int,
                                              dcgmFieldValue_v1 *);

#endif
