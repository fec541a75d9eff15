/*===- train.c - train a model through the C API ---------------------------===*
 *
 * An embedder's view of mp: compile a model file, train it on an .npz data
 * set with the library's trainer (the loop mp-run train runs) and print its
 * progress lines; C only, linked against libmp_session.so.
 *
 *   mp-capi-train MODEL.mlir DATA.npz [--precision P] [--epochs N]
 *                 [--seed S] [--checkpoint FILE] [--checkpoint-every N]
 *                 [--resume] [--stats FILE]
 *
 * DATA.npz holds x_train, y_train, x_test, y_test (f32 matrices, labels
 * one-hot). python/tests/test_frontends_agree.py checks that it trains
 * bit for bit as mp-run and Python do.
 *
 *===----------------------------------------------------------------------===*/

#include "mp-c/Session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Member `name` of `npz` as an f32 matrix with `columns` columns. */
static mprt_tensor *matrix(mprt_npz *npz, const char *name, int64_t columns) {
  mprt_tensor *tensor = NULL;
  if (mprt_npz_get(npz, name, &tensor) != MPRT_OK) {
    fprintf(stderr, "mp-capi-train: error: %s\n", mprt_last_error());
    return NULL;
  }
  if (mprt_tensor_dtype(tensor) != MPRT_DTYPE_F32 ||
      mprt_tensor_rank(tensor) != 2 ||
      mprt_tensor_shape(tensor)[1] != columns) {
    fprintf(stderr,
            "mp-capi-train: error: '%s' must be an f32 matrix with %lld "
            "columns\n",
            name, (long long)columns);
    mprt_tensor_free(tensor);
    return NULL;
  }
  return tensor;
}

static int usage(void) {
  fprintf(stderr, "usage: mp-capi-train MODEL.mlir DATA.npz [--precision P] "
                  "[--epochs N] [--seed S] [--checkpoint FILE] "
                  "[--checkpoint-every N] [--resume] [--stats FILE]\n");
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 3)
    return usage();
  mp_session_options options;
  mp_session_options_init(&options);
  mp_trainer_options run;
  mp_trainer_options_init(&run);
  for (int i = 3; i < argc; ++i) {
    int more = i + 1 < argc;
    if (!strcmp(argv[i], "--precision") && more)
      options.precision = argv[++i];
    else if (!strcmp(argv[i], "--epochs") && more)
      run.epochs = strtoll(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--seed") && more)
      options.seed = run.seed = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--checkpoint") && more)
      run.checkpoint = argv[++i];
    else if (!strcmp(argv[i], "--checkpoint-every") && more)
      run.checkpoint_every = strtoll(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--resume"))
      run.resume = 1;
    else if (!strcmp(argv[i], "--stats") && more)
      run.stats_path = argv[++i];
    else
      return usage();
  }

  mp_session *session = NULL;
  if (mp_session_create(argv[1], &options, &session)) {
    fprintf(stderr, "mp-capi-train: error: %s\n", mp_last_error());
    return 1;
  }
  int64_t features = mp_session_num_features(session);
  int64_t classes = mp_session_num_classes(session);
  mprt_npz *npz = NULL;
  if (mprt_npz_open(argv[2], &npz) != MPRT_OK) {
    fprintf(stderr, "mp-capi-train: error: %s\n", mprt_last_error());
    mp_session_free(session);
    return 1;
  }
  mprt_tensor *xTrain = matrix(npz, "x_train", features);
  mprt_tensor *yTrain = matrix(npz, "y_train", classes);
  mprt_tensor *xTest = matrix(npz, "x_test", features);
  mprt_tensor *yTest = matrix(npz, "y_test", classes);
  mprt_npz_close(npz);
  int status = 1;
  mp_trainer *trainer = NULL;
  if (!xTrain || !yTrain || !xTest || !yTest)
    goto done;
  if (mprt_tensor_shape(xTrain)[0] != mprt_tensor_shape(yTrain)[0] ||
      mprt_tensor_shape(xTest)[0] != mprt_tensor_shape(yTest)[0]) {
    fprintf(stderr, "mp-capi-train: error: x and y row counts differ\n");
    goto done;
  }
  if (mp_trainer_create(session, mprt_tensor_data(xTrain),
                        mprt_tensor_data(yTrain), mprt_tensor_shape(xTrain)[0],
                        mprt_tensor_data(xTest), mprt_tensor_data(yTest),
                        mprt_tensor_shape(xTest)[0], &run, &trainer)) {
    fprintf(stderr, "mp-capi-train: error: %s\n", mp_last_error());
    goto done;
  }
  if (run.resume)
    printf("resuming at epoch %lld, batch %lld\n",
           (long long)mp_trainer_epoch(trainer) + 1,
           (long long)mp_trainer_batch(trainer));
  while (!mp_trainer_finished(trainer)) {
    int failed = mp_trainer_run_epoch(trainer, NULL);
    /* The stability monitor's reports of the epoch, as mp-run warns. */
    const mp_stability_report *reports = NULL;
    int64_t count = mp_trainer_reports(trainer, &reports);
    for (int64_t r = 0; r < count; ++r)
      fprintf(stderr, "mp-capi-train: warning: step %lld: %s: %s\n",
              (long long)reports[r].step, reports[r].issue,
              reports[r].message);
    if (failed) {
      fprintf(stderr, "mp-capi-train: error: %s\n", mp_last_error());
      goto done;
    }
    printf("%s\n", mp_trainer_line(trainer));
    fflush(stdout);
  }
  status = 0;
done:
  mp_trainer_free(trainer);
  mprt_tensor_free(xTrain);
  mprt_tensor_free(yTrain);
  mprt_tensor_free(xTest);
  mprt_tensor_free(yTest);
  mp_session_free(session);
  return status;
}
