// Prints, as JSON, where each webgpu.h struct field that wasm/webgpu/library_webgpu.js reads or writes lies in wasm32
// memory. wasm/build.mjs compiles and runs it against the same header ggml-webgpu is compiled with, so the JS side
// never hard-codes an offset that a newer header could move.
#include <webgpu/webgpu.h>

#include <cstddef>
#include <cstdio>

static bool first = true;

static void field(const char * s, const char * f, size_t off, size_t size) {
    std::printf("%s[\"%s\",\"%s\",%zu,%zu]", first ? "" : ",", s, f, off, size);
    first = false;
}

#define F(S, f) field(#S, #f, offsetof(S, f), sizeof(((S *) nullptr)->f))
#define SIZE(S) field(#S, "$size", sizeof(S), 0)

int main() {
    std::printf("[");
    F(WGPUStringView, data);
    F(WGPUStringView, length);
    F(WGPUFutureWaitInfo, future);
    F(WGPUFutureWaitInfo, completed);
    SIZE(WGPUFutureWaitInfo);
    // Every *CallbackInfo with a mode has the same shape; the uncaptured-error one has no mode.
    F(WGPURequestAdapterCallbackInfo, callback);
    F(WGPURequestAdapterCallbackInfo, userdata1);
    F(WGPURequestAdapterCallbackInfo, userdata2);
    F(WGPUBufferMapCallbackInfo, callback);
    F(WGPUQueueWorkDoneCallbackInfo, callback);
    F(WGPURequestDeviceCallbackInfo, callback);
    F(WGPUDeviceLostCallbackInfo, callback);
    F(WGPUUncapturedErrorCallbackInfo, callback);
    F(WGPUUncapturedErrorCallbackInfo, userdata1);
    F(WGPUUncapturedErrorCallbackInfo, userdata2);
    F(WGPURequestAdapterOptions, powerPreference);
    F(WGPURequestAdapterOptions, forceFallbackAdapter);
    F(WGPULimits, maxTextureDimension1D);
    F(WGPULimits, maxTextureDimension2D);
    F(WGPULimits, maxTextureDimension3D);
    F(WGPULimits, maxTextureArrayLayers);
    F(WGPULimits, maxBindGroups);
    F(WGPULimits, maxBindGroupsPlusVertexBuffers);
    F(WGPULimits, maxBindingsPerBindGroup);
    F(WGPULimits, maxDynamicUniformBuffersPerPipelineLayout);
    F(WGPULimits, maxDynamicStorageBuffersPerPipelineLayout);
    F(WGPULimits, maxSampledTexturesPerShaderStage);
    F(WGPULimits, maxSamplersPerShaderStage);
    F(WGPULimits, maxStorageBuffersPerShaderStage);
    F(WGPULimits, maxStorageTexturesPerShaderStage);
    F(WGPULimits, maxUniformBuffersPerShaderStage);
    F(WGPULimits, maxUniformBufferBindingSize);
    F(WGPULimits, maxStorageBufferBindingSize);
    F(WGPULimits, minUniformBufferOffsetAlignment);
    F(WGPULimits, minStorageBufferOffsetAlignment);
    F(WGPULimits, maxVertexBuffers);
    F(WGPULimits, maxBufferSize);
    F(WGPULimits, maxVertexAttributes);
    F(WGPULimits, maxVertexBufferArrayStride);
    F(WGPULimits, maxInterStageShaderVariables);
    F(WGPULimits, maxColorAttachments);
    F(WGPULimits, maxColorAttachmentBytesPerSample);
    F(WGPULimits, maxComputeWorkgroupStorageSize);
    F(WGPULimits, maxComputeInvocationsPerWorkgroup);
    F(WGPULimits, maxComputeWorkgroupSizeX);
    F(WGPULimits, maxComputeWorkgroupSizeY);
    F(WGPULimits, maxComputeWorkgroupSizeZ);
    F(WGPULimits, maxComputeWorkgroupsPerDimension);
    F(WGPULimits, maxImmediateSize);
    F(WGPUAdapterInfo, nextInChain);
    F(WGPUAdapterInfo, vendor);
    F(WGPUAdapterInfo, architecture);
    F(WGPUAdapterInfo, device);
    F(WGPUAdapterInfo, description);
    F(WGPUAdapterInfo, backendType);
    F(WGPUAdapterInfo, adapterType);
    F(WGPUAdapterInfo, vendorID);
    F(WGPUAdapterInfo, deviceID);
    F(WGPUAdapterInfo, subgroupMinSize);
    F(WGPUAdapterInfo, subgroupMaxSize);
    F(WGPUAdapterPropertiesSubgroupMatrixConfigs, configCount);
    F(WGPUAdapterPropertiesSubgroupMatrixConfigs, configs);
    F(WGPUSubgroupMatrixConfig, componentType);
    F(WGPUSubgroupMatrixConfig, resultComponentType);
    F(WGPUSubgroupMatrixConfig, M);
    F(WGPUSubgroupMatrixConfig, N);
    F(WGPUSubgroupMatrixConfig, K);
    SIZE(WGPUSubgroupMatrixConfig);
    F(WGPUDeviceDescriptor, label);
    F(WGPUDeviceDescriptor, requiredFeatureCount);
    F(WGPUDeviceDescriptor, requiredFeatures);
    F(WGPUDeviceDescriptor, requiredLimits);
    F(WGPUDeviceDescriptor, deviceLostCallbackInfo);
    F(WGPUDeviceDescriptor, uncapturedErrorCallbackInfo);
    F(WGPUBufferDescriptor, label);
    F(WGPUBufferDescriptor, usage);
    F(WGPUBufferDescriptor, size);
    F(WGPUBufferDescriptor, mappedAtCreation);
    F(WGPUChainedStruct, next);
    F(WGPUChainedStruct, sType);
    F(WGPUShaderModuleDescriptor, nextInChain);
    F(WGPUShaderModuleDescriptor, label);
    F(WGPUShaderSourceWGSL, code);
    F(WGPUComputePipelineDescriptor, label);
    F(WGPUComputePipelineDescriptor, layout);
    F(WGPUComputePipelineDescriptor, compute);
    F(WGPUComputeState, module);
    F(WGPUComputeState, entryPoint);
    F(WGPUComputeState, constantCount);
    F(WGPUComputeState, constants);
    F(WGPUConstantEntry, key);
    F(WGPUConstantEntry, value);
    SIZE(WGPUConstantEntry);
    F(WGPUBindGroupDescriptor, label);
    F(WGPUBindGroupDescriptor, layout);
    F(WGPUBindGroupDescriptor, entryCount);
    F(WGPUBindGroupDescriptor, entries);
    F(WGPUBindGroupEntry, binding);
    F(WGPUBindGroupEntry, buffer);
    F(WGPUBindGroupEntry, offset);
    F(WGPUBindGroupEntry, size);
    SIZE(WGPUBindGroupEntry);
    F(WGPUCommandEncoderDescriptor, label);
    F(WGPUComputePassDescriptor, label);
    F(WGPUComputePassDescriptor, timestampWrites);
    std::printf("]\n");
    return 0;
}
