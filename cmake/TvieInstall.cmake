# install(EXPORT) so that users can find_package(tvie) and link tvie::tvie.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS tvie tvie_log tvie_torch_deps EXPORT tvieTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/lib/include/tvie DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp")
install(TARGETS tvie_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT tvieTargets NAMESPACE tvie:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tvie)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tvieConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tvieConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tvie)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tvieConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tvieConfig.cmake ${PROJECT_BINARY_DIR}/tvieConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tvie)
