/* CUnit runner for every suite.
 *   memplan_tests                 all groups
 *   memplan_tests --group NAME    the suites of tests/test_NAME.c
 *   memplan_tests SUITE           one suite by its CUnit name
 * Reads the failure counts before cleaning up (CU_cleanup_registry resets
 * them), prints "N passed, M failed" last, exits non-zero on any failure. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.inc"

int main(int argc, char **argv)
{
    const char *group = NULL, *suite = NULL;
    if (argc > 2 && strcmp(argv[1], "--group") == 0)
        group = argv[2];
    else if (argc > 1)
        suite = argv[1];
    if (CU_initialize_registry() != CUE_SUCCESS)
        return EXIT_FAILURE;
    size_t found = 0;
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        if (!group || strcmp(group, groups[i].name) == 0) {
            groups[i].fn();
            found++;
        }
    if (!found || CU_get_error() != CUE_SUCCESS) {
        fprintf(stderr, "%s\n", found ? CU_get_error_msg() : "no such group");
        CU_cleanup_registry();
        return EXIT_FAILURE;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    if (suite) {
        CU_pSuite s = CU_get_suite(suite);
        if (!s) {
            fprintf(stderr, "no suite named %s\n", suite);
            CU_cleanup_registry();
            return EXIT_FAILURE;
        }
        CU_basic_run_suite(s);
    } else {
        CU_basic_run_tests();
    }
    unsigned failed_asserts = CU_get_number_of_failures();
    unsigned failed = CU_get_number_of_tests_failed();
    unsigned run = CU_get_number_of_tests_run();
    CU_cleanup_registry();
    printf("\n%u passed, %u failed\n", run - failed, failed);
    return (failed_asserts || failed || run == 0) ? EXIT_FAILURE
                                                  : EXIT_SUCCESS;
}
