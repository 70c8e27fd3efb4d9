/* vtllm.h: the C API of vtllm (libvtllm.so), a flat ABI over the engine and its
 * OpenAI server layer, for embedding without HTTP. docs/CAPI.md shows how to build
 * against it.
 *
 * Requests and responses are the OpenAI JSON bodies of `vtllm serve`'s
 * /v1/completions and /v1/chat/completions, parsed, run and written by the same
 * code: what a call returns is byte for byte what the server would send (apart from
 * the response "id" and "created", which are per request).
 *
 * Errors: every function returning int returns VTLLM_OK (0) or one of the
 * VTLLM_ERR_* codes below, and every failure sets the calling thread's
 * vtllm_last_error(). No C++ exception and no abort crosses this boundary.
 *
 * Threads: an engine may be used from many threads at once (requests from several
 * threads are batched together by the engine); vtllm_engine_destroy must not
 * overlap any other call on the same engine.
 *
 * Strings: every const char* argument is NUL-terminated UTF-8, owned by the
 * caller and only read during the call. Strings returned through char** are the
 * caller's, to free with vtllm_free_string. */
#ifndef VTLLM_H_
#define VTLLM_H_

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define VTLLM_API __attribute__((visibility("default")))
#else
#define VTLLM_API
#endif

/* The ABI this header describes; vtllm_abi_version() returns the library's. A
 * program should refuse a library whose version differs from the one it was
 * compiled against. */
#define VTLLM_ABI_VERSION 1

/* Return codes. */
enum {
  VTLLM_OK = 0,
  /* A NULL pointer where one is needed, or options_json that is not a JSON object of
   * known keys with values of the right type (the message names the key). */
  VTLLM_ERR_INVALID_ARGUMENT = 1,
  /* vtllm_engine_create could not load the model (the message names the directory or
   * file and the problem). */
  VTLLM_ERR_MODEL_LOAD = 2,
  /* The request was refused, as the server answers HTTP 4xx (bad JSON, a field of the
   * wrong type or out of range, an unknown model name, a context overflow, a duplicate
   * request_id). */
  VTLLM_ERR_INVALID_REQUEST = 3,
  /* Too many requests in flight (HTTP 503); retry later. */
  VTLLM_ERR_UNAVAILABLE = 4,
  /* vtllm_abort: no request with that id is in flight. */
  VTLLM_ERR_NOT_FOUND = 5,
  /* The engine failed (HTTP 500), memory ran out, or any other unexpected failure. */
  VTLLM_ERR_INTERNAL = 6
};

/* An engine: one model loaded, its scheduler and its thread. Opaque. */
typedef struct vtllm_engine vtllm_engine;

/* Called by vtllm_stream with each server-sent-event payload in order: the JSON of
 * one chunk (the text after "data: "), and "[DONE]" last. `data` is NUL-terminated
 * and valid only during the call. Return 0 to go on; any other value stops the
 * stream and aborts the request (vtllm_stream then returns VTLLM_OK). */
typedef int (*vtllm_stream_fn)(const char* data, void* user);

/* The ABI version of the library (VTLLM_ABI_VERSION when it was built). */
VTLLM_API int vtllm_abi_version(void);

/* The library's version string ("0.1.0"); static storage. */
VTLLM_API const char* vtllm_version(void);

/* Loads the model in `model_dir` and starts an engine; *out receives it (NULL on
 * failure). `options_json` (may be NULL or "" for the defaults) is a JSON object whose
 * keys are `vtllm serve`'s flags with underscores:
 *   "device": "auto"|"cpu"|"cuda"    "load_format": "auto"|"dummy"
 *   "max_model_len": N               "max_num_seqs": N (default 256)
 *   "max_num_batched_tokens": N      "num_gpu_blocks_override": N
 *   "gpu_memory_utilization": F      "enable_prefix_caching": bool (default true)
 *   "enforce_eager": bool            "language_model_only": bool
 *   "chat_template": FILE            "served_model_name": NAME (default model_dir)
 *   "generation_config": "auto"|"vllm"|DIR (default sampling parameters, as the flag)
 *   "override_generation_config": {generation_config.json fields}
 * An unknown key, a value of the wrong type or out of range is
 * VTLLM_ERR_INVALID_ARGUMENT naming the key; a directory that does not hold a loadable
 * model (or has no tokenizer) is VTLLM_ERR_MODEL_LOAD, the message naming it. */
VTLLM_API int vtllm_engine_create(const char* model_dir, const char* options_json,
                                  vtllm_engine** out);

/* Stops the engine and frees it (NULL: nothing). No call on it may be in progress. */
VTLLM_API void vtllm_engine_destroy(vtllm_engine* engine);

/* A /v1/completions request: `request_json` is its body, *response_json receives the
 * whole response body on VTLLM_OK (NULL otherwise). Blocks until the request ends. A
 * body asking for "stream": true is VTLLM_ERR_INVALID_REQUEST (use vtllm_stream).
 *
 * The body may carry "request_id" (a string, as vLLM's requests do): while the call
 * runs, vtllm_abort with that id ends it, and the response then has finish_reason
 * "abort". Two requests in flight may not share a request_id.
 *
 * On failure of any of the request calls (vtllm_complete, vtllm_chat, vtllm_stream)
 * vtllm_last_error() is the OpenAI error object the server would answer,
 * {"error": {"message", "type", "param", "code"}}. */
VTLLM_API int vtllm_complete(vtllm_engine* engine, const char* request_json, char** response_json);

/* A /v1/chat/completions request; as vtllm_complete otherwise. A model without a chat
 * template answers VTLLM_ERR_INVALID_REQUEST. */
VTLLM_API int vtllm_chat(vtllm_engine* engine, const char* request_json, char** response_json);

/* A streamed request: a chat completion when the body has "messages", a completion
 * otherwise; the body's "stream" is taken as true. Calls `cb` with each chunk as the
 * server sends it (see vtllm_stream_fn) and returns after "[DONE]" or when `cb` stopped
 * the stream. A request refused before it starts returns its error without calling
 * `cb`; an engine failure mid-stream is delivered as an {"error": ...} chunk (then
 * "[DONE]") and returns VTLLM_ERR_INTERNAL. "request_id" and vtllm_abort work as for
 * vtllm_complete: the aborted stream ends with a chunk whose finish_reason is "abort". */
VTLLM_API int vtllm_stream(vtllm_engine* engine, const char* request_json, vtllm_stream_fn cb,
                           void* user);

/* Ends the request in flight whose body carried "request_id": `request_id`, from any
 * thread; VTLLM_ERR_NOT_FOUND when none is (it may have just finished). */
VTLLM_API int vtllm_abort(vtllm_engine* engine, const char* request_id);

/* Frees a string this library returned (NULL: nothing). */
VTLLM_API void vtllm_free_string(char* s);

/* The message of the calling thread's last failed call ("" when none failed yet). Valid
 * until the thread's next failing call into the library. */
VTLLM_API const char* vtllm_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* VTLLM_H_ */
