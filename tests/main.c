/* CUnit runner for every suite. Reads the failure counts before cleaning up
 * (CU_cleanup_registry resets them) and exits non-zero on any failure. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.inc"

int main(int argc, char **argv)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return EXIT_FAILURE;
    register_all();
    if (CU_get_error() != CUE_SUCCESS) {
        fprintf(stderr, "test registration failed: %s\n", CU_get_error_msg());
        CU_cleanup_registry();
        return EXIT_FAILURE;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    if (argc > 1) {
        /* run one suite by name */
        CU_pSuite s = CU_get_suite(argv[1]);
        if (!s) {
            fprintf(stderr, "no suite named %s\n", argv[1]);
            CU_cleanup_registry();
            return EXIT_FAILURE;
        }
        CU_basic_run_suite(s);
    } else {
        CU_basic_run_tests();
    }
    unsigned failed = CU_get_number_of_failures();
    unsigned tests_failed = CU_get_number_of_tests_failed();
    unsigned run = CU_get_number_of_tests_run();
    CU_cleanup_registry();
    printf("\n%u tests run, %u assertion failures\n", run, failed);
    return (failed || tests_failed || run == 0) ? EXIT_FAILURE : EXIT_SUCCESS;
}
