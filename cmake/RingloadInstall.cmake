# `cmake --install` puts libringload, its public headers, the ringload command and a package
# config in the prefix, so that a consumer can `find_package(ringload)` and link
# `ringload::ringload`.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS ringload ringload_cli EXPORT ringloadTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES
    bindings/cpp/include/ringload/convert.hpp
    bindings/cpp/include/ringload/crypto_params.hpp
    bindings/cpp/include/ringload/device.hpp
    bindings/cpp/include/ringload/formats.hpp
    bindings/cpp/include/ringload/model_load.hpp
    bindings/cpp/include/ringload/model_signing.hpp
    bindings/cpp/include/ringload/options.hpp
    bindings/cpp/include/ringload/placement.hpp
    bindings/cpp/include/ringload/ringload.hpp
    bindings/cpp/include/ringload/serializer.hpp
    bindings/cpp/include/ringload/share_plan.hpp
    engine/include/ringload/dtype.hpp
    engine/include/ringload/error.hpp
    engine/include/ringload/format.hpp
    engine/include/ringload/progress.hpp
    engine/include/ringload/tensor_info.hpp
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ringload)
# The network settings of OpenOptions/WriteOptions (plain standard types, no Boost), and the
# feed interface of WriteOptions (standard types only).
install(FILES io/include/ringload/io/network_options.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ringload/io)
install(FILES engine/include/ringload/engine/write_feed.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ringload/engine)
install(EXPORT ringloadTargets NAMESPACE ringload:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ringload)
configure_package_config_file(cmake/ringloadConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/ringloadConfig.cmake
    INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ringload)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ringloadConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ringloadConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/ringloadConfigVersion.cmake
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ringload)

# The libtorch adapter, where it was built: ringload::torch in an export of its own, which
# ringloadConfig.cmake loads when present; a consumer also calls find_package(Torch) (or asks
# for find_package(ringload COMPONENTS torch), which does).
if(RINGLOAD_HAVE_TORCH)
    set_target_properties(ringload_torch PROPERTIES EXPORT_NAME torch)
    install(TARGETS ringload_torch EXPORT ringloadTorchTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
    install(FILES bindings/torch/include/ringload/torch.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ringload)
    install(EXPORT ringloadTorchTargets NAMESPACE ringload:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ringload)
endif()
