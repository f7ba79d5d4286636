/*
 * The part of NVML's C ABI that strobe uses, declared here so that nothing
 * NVIDIA's is needed at build time: strobe loads libnvidia-ml.so.1 with
 * dlopen and resolves these names once. Types and values follow nvml.h
 * (they are ABI: never change one); only what strobe calls is here.
 *
 * The test NVML (tests/nvml/fake_nvml.c) implements the same functions with
 * the same signatures, scripted from a scenario file.
 */
#ifndef STROBE_GPU_NVML_API_H
#define STROBE_GPU_NVML_API_H

typedef int nvmlReturn_t;
#define NVML_SUCCESS                  0
#define NVML_ERROR_UNINITIALIZED      1
#define NVML_ERROR_INVALID_ARGUMENT   2
#define NVML_ERROR_NOT_SUPPORTED      3
#define NVML_ERROR_NO_PERMISSION      4
#define NVML_ERROR_NOT_FOUND          6
#define NVML_ERROR_INSUFFICIENT_SIZE  7
#define NVML_ERROR_DRIVER_NOT_LOADED  9
#define NVML_ERROR_TIMEOUT            10
#define NVML_ERROR_FUNCTION_NOT_FOUND 13
#define NVML_ERROR_GPU_IS_LOST        15
#define NVML_ERROR_NO_DATA            21
#define NVML_ERROR_UNKNOWN            999

typedef struct nvmlDevice_st *nvmlDevice_t;

#define NVML_DEVICE_NAME_V2_BUFFER_SIZE        96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE        96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80

/* nvmlDeviceGetMigMode: Multi-Instance GPU off or on. A MIG device (one
 * compute instance of a GPU instance) has a handle of its own, from
 * nvmlDeviceGetMigDeviceHandleByIndex, that name, UUID ("MIG-..."), memory
 * and the instance ids accept. */
#define NVML_DEVICE_MIG_DISABLE 0
#define NVML_DEVICE_MIG_ENABLE  1

typedef struct {
    unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;

typedef struct {
    unsigned int gpu;    /* percent of the last period in which a kernel ran */
    unsigned int memory; /* percent of it in which device memory was read or written */
} nvmlUtilization_t;

/* nvmlDeviceGetSamples */
typedef int nvmlSamplingType_t;
#define NVML_TOTAL_POWER_SAMPLES        0
#define NVML_GPU_UTILIZATION_SAMPLES    1
#define NVML_MEMORY_UTILIZATION_SAMPLES 2

typedef int nvmlValueType_t;
#define NVML_VALUE_TYPE_DOUBLE             0
#define NVML_VALUE_TYPE_UNSIGNED_INT       1
#define NVML_VALUE_TYPE_UNSIGNED_LONG      2
#define NVML_VALUE_TYPE_UNSIGNED_LONG_LONG 3
#define NVML_VALUE_TYPE_SIGNED_LONG_LONG   4

typedef union {
    double dVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
} nvmlValue_t;

typedef struct {
    unsigned long long timeStamp; /* µs since the epoch */
    nvmlValue_t sampleValue;
} nvmlSample_t;

typedef int nvmlTemperatureSensors_t;
#define NVML_TEMPERATURE_GPU 0

typedef int nvmlClockType_t;
#define NVML_CLOCK_GRAPHICS 0
#define NVML_CLOCK_SM       1
#define NVML_CLOCK_MEM      2

typedef int nvmlPcieUtilCounter_t;
#define NVML_PCIE_UTIL_TX_BYTES 0
#define NVML_PCIE_UTIL_RX_BYTES 1

typedef int nvmlMemoryErrorType_t;
#define NVML_MEMORY_ERROR_TYPE_CORRECTED   0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
typedef int nvmlEccCounterType_t;
#define NVML_VOLATILE_ECC  0
#define NVML_AGGREGATE_ECC 1

/* _v2 and _v3 of the running-process queries take this layout */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory; /* bytes; NVML_VALUE_NOT_AVAILABLE when unknown */
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)

typedef struct {
    unsigned int pid;
    unsigned long long timeStamp; /* µs */
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

/* nvmlDeviceGetFieldValues: NVLink data throughput counters, KiB since the
 * driver loaded, one field per link (scopeId is the link). */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139
#define NVML_NVLINK_MAX_LINKS                 18

typedef struct {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp; /* µs since the epoch */
    long long latencyUsec;
    nvmlValueType_t valueType;
    nvmlReturn_t nvmlReturn; /* this field's own result */
    nvmlValue_t value;
} nvmlFieldValue_t;

/* Every function strobe resolves: X(return, name, arguments). A name that a
 * driver lacks stays NULL and its metric is skipped. */
#define NVML_FUNCTIONS(X)                                                                          \
    X(nvmlReturn_t, nvmlInit_v2, (void))                                                           \
    X(nvmlReturn_t, nvmlShutdown, (void))                                                          \
    X(const char *, nvmlErrorString, (nvmlReturn_t))                                               \
    X(nvmlReturn_t, nvmlSystemGetDriverVersion, (char *, unsigned int))                            \
    X(nvmlReturn_t, nvmlDeviceGetCount_v2, (unsigned int *))                                       \
    X(nvmlReturn_t, nvmlDeviceGetHandleByIndex_v2, (unsigned int, nvmlDevice_t *))                 \
    X(nvmlReturn_t, nvmlDeviceGetName, (nvmlDevice_t, char *, unsigned int))                       \
    X(nvmlReturn_t, nvmlDeviceGetUUID, (nvmlDevice_t, char *, unsigned int))                       \
    X(nvmlReturn_t, nvmlDeviceGetMemoryInfo, (nvmlDevice_t, nvmlMemory_t *))                       \
    X(nvmlReturn_t, nvmlDeviceGetUtilizationRates, (nvmlDevice_t, nvmlUtilization_t *))            \
    X(nvmlReturn_t, nvmlDeviceGetSamples,                                                          \
      (nvmlDevice_t, nvmlSamplingType_t, unsigned long long, nvmlValueType_t *, unsigned int *,    \
       nvmlSample_t *))                                                                            \
    X(nvmlReturn_t, nvmlDeviceGetPowerUsage, (nvmlDevice_t, unsigned int *))                       \
    X(nvmlReturn_t, nvmlDeviceGetTotalEnergyConsumption, (nvmlDevice_t, unsigned long long *))     \
    X(nvmlReturn_t, nvmlDeviceGetTemperature,                                                      \
      (nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int *))                                    \
    X(nvmlReturn_t, nvmlDeviceGetClockInfo, (nvmlDevice_t, nvmlClockType_t, unsigned int *))       \
    X(nvmlReturn_t, nvmlDeviceGetCurrentClocksThrottleReasons,                                     \
      (nvmlDevice_t, unsigned long long *))                                                        \
    X(nvmlReturn_t, nvmlDeviceGetPcieThroughput,                                                   \
      (nvmlDevice_t, nvmlPcieUtilCounter_t, unsigned int *))                                       \
    X(nvmlReturn_t, nvmlDeviceGetTotalEccErrors,                                                   \
      (nvmlDevice_t, nvmlMemoryErrorType_t, nvmlEccCounterType_t, unsigned long long *))           \
    X(nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses_v3,                                       \
      (nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *))                                         \
    X(nvmlReturn_t, nvmlDeviceGetProcessUtilization,                                               \
      (nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *, unsigned long long))        \
    X(nvmlReturn_t, nvmlDeviceGetFieldValues, (nvmlDevice_t, int, nvmlFieldValue_t *))             \
    X(nvmlReturn_t, nvmlDeviceGetMigMode, (nvmlDevice_t, unsigned int *, unsigned int *))          \
    X(nvmlReturn_t, nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t, unsigned int *))                \
    X(nvmlReturn_t, nvmlDeviceGetMigDeviceHandleByIndex,                                           \
      (nvmlDevice_t, unsigned int, nvmlDevice_t *))                                                \
    X(nvmlReturn_t, nvmlDeviceGetGpuInstanceId, (nvmlDevice_t, unsigned int *))                    \
    X(nvmlReturn_t, nvmlDeviceGetComputeInstanceId, (nvmlDevice_t, unsigned int *))

#endif
