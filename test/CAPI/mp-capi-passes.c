/*===- mp-capi-passes.c - mp's passes driven through the C API alone ----===*
 *
 * What a compiler or binding written against mlir-c does with mp: register
 * the dialects, parse a model, add mp's passes to a pass manager, run, and
 * print the result. test/CAPI/passes.test compares the output with mp-opt's.
 *
 *   mp-capi-passes amp FILE OPTIONS       mpAddAutoMixedPrecision
 *   mp-capi-passes train FILE OPTIONS     mpAddTrainPipeline
 *   mp-capi-passes pipeline FILE TEXT     mpRegisterAllPasses, then the
 *                                         textual pipeline TEXT
 *   mp-capi-passes create FILE            mlirCreateMPTransformsMPAutodiff()
 *
 *===----------------------------------------------------------------------===*/

#include "mp-c/Passes.h"

#include "mlir-c/RegisterEverything.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void printToStream(MlirStringRef text, void *stream) {
  fwrite(text.data, 1, text.length, (FILE *)stream);
}

/* Error callbacks may be called with a message in pieces (MLIR's pipeline
 * parser streams its diagnostic): collect them, print once. */
static char errors[4096];
static void collectError(MlirStringRef text, void *userData) {
  (void)userData;
  size_t used = strlen(errors);
  size_t room = sizeof(errors) - 1 - used;
  size_t length = text.length < room ? text.length : room;
  memcpy(errors + used, text.data, length);
  errors[used + length] = '\0';
}

static char *readFile(const char *path) {
  FILE *file = fopen(path, "rb");
  if (!file)
    return NULL;
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  char *text = malloc((size_t)size + 1);
  if (text && fread(text, 1, (size_t)size, file) != (size_t)size) {
    free(text);
    text = NULL;
  }
  if (text)
    text[size] = '\0';
  fclose(file);
  return text;
}

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[1], "create") != 0 && argc < 4)) {
    fprintf(stderr, "usage: mp-capi-passes amp|train|pipeline|create FILE "
                    "[OPTIONS|PIPELINE]\n");
    return 2;
  }
  const char *mode = argv[1];
  char *text = readFile(argv[2]);
  if (!text) {
    fprintf(stderr, "mp-capi-passes: cannot read %s\n", argv[2]);
    return 1;
  }

  MlirContext context = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  mlirDialectHandleInsertDialect(mlirGetDialectHandle__mp__(), registry);
  mlirContextAppendDialectRegistry(context, registry);
  mlirDialectRegistryDestroy(registry);

  int status = 1;
  MlirModule module =
      mlirModuleCreateParse(context, mlirStringRefCreateFromCString(text));
  MlirPassManager passManager = mlirPassManagerCreate(context);
  MlirOpPassManager top = mlirPassManagerGetAsOpPassManager(passManager);
  if (mlirModuleIsNull(module)) {
    fprintf(stderr, "mp-capi-passes: cannot parse %s\n", argv[2]);
    goto done;
  }

  MlirLogicalResult added = mlirLogicalResultSuccess();
  if (strcmp(mode, "amp") == 0) {
    added = mpAddAutoMixedPrecision(
        top, mlirStringRefCreateFromCString(argv[3]), collectError, NULL);
  } else if (strcmp(mode, "train") == 0) {
    added = mpAddTrainPipeline(top, mlirStringRefCreateFromCString(argv[3]),
                               collectError, NULL);
  } else if (strcmp(mode, "pipeline") == 0) {
    mpRegisterAllPasses();
    added = mlirOpPassManagerAddPipeline(
        top, mlirStringRefCreateFromCString(argv[3]), collectError, NULL);
  } else if (strcmp(mode, "create") == 0) {
    mlirPassManagerAddOwnedPass(passManager,
                                mlirCreateMPTransformsMPAutodiff());
  } else {
    fprintf(stderr, "mp-capi-passes: unknown mode '%s'\n", mode);
    goto done;
  }
  if (mlirLogicalResultIsFailure(added)) {
    fprintf(stderr, "mp-capi-passes: %s\nmp-capi-passes: no passes added\n",
            errors);
    goto done;
  }

  if (mlirLogicalResultIsFailure(
          mlirPassManagerRunOnOp(passManager, mlirModuleGetOperation(module)))) {
    fprintf(stderr, "mp-capi-passes: the passes failed\n");
    goto done;
  }
  mlirOperationPrint(mlirModuleGetOperation(module), printToStream, stdout);
  printf("\n");
  status = 0;

done:
  mlirPassManagerDestroy(passManager);
  if (!mlirModuleIsNull(module))
    mlirModuleDestroy(module);
  mlirContextDestroy(context);
  free(text);
  return status;
}
