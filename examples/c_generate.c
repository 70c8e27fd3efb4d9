/* c_generate MODEL_DIR PROMPT [MAX_TOKENS]: one greedy completion through the C API
 * (include/vtllm.h), its text printed to stdout (followed by a newline), as
 * `vtllm generate MODEL_DIR --prompt PROMPT --max-tokens MAX_TOKENS` prints it.
 *
 * Plain C: the response is the OpenAI completion JSON, and the choice's "text" is
 * cut out of it with a small string reader instead of a JSON library. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vtllm.h"

/* Writes `s` into `out` as a JSON string body: quotes, backslashes and control
 * characters escaped. `out` holds at least 6 * strlen(s) + 1 bytes. */
static void write_json_string(char* out, const char* s) {
  for (; *s; ++s) {
    const unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      *out++ = '\\';
      *out++ = (char)c;
    } else if (c < 0x20) {
      out += sprintf(out, "\\u%04x", c);
    } else {
      *out++ = (char)c;
    }
  }
  *out = '\0';
}

/* Writes the JSON string starting at `p` (just after its opening quote) to stdout,
 * unescaped. The server writes non-ASCII as raw UTF-8; \uXXXX escapes are only
 * control characters there, printed as one byte. */
static void print_json_string(const char* p) {
  for (; *p && *p != '"'; ++p) {
    if (*p != '\\') {
      putchar(*p);
      continue;
    }
    ++p;
    switch (*p) {
      case 'n':
        putchar('\n');
        break;
      case 't':
        putchar('\t');
        break;
      case 'r':
        putchar('\r');
        break;
      case 'b':
        putchar('\b');
        break;
      case 'f':
        putchar('\f');
        break;
      case 'u': {
        unsigned v = 0;
        if (sscanf(p + 1, "%4x", &v) == 1) putchar((int)v);
        p += 4;
        break;
      }
      default:
        putchar(*p);
        break; /* \" \\ \/ */
    }
  }
}

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: %s MODEL_DIR PROMPT [MAX_TOKENS]\n", argv[0]);
    return 2;
  }
  const int max_tokens = argc == 4 ? atoi(argv[3]) : 16;
  if (vtllm_abi_version() != VTLLM_ABI_VERSION) {
    fprintf(stderr, "libvtllm ABI %d, this program expects %d\n", vtllm_abi_version(),
            VTLLM_ABI_VERSION);
    return 1;
  }
  vtllm_engine* engine = NULL;
  int rc = vtllm_engine_create(argv[1], "{\"device\": \"cpu\", \"max_num_seqs\": 1}", &engine);
  if (rc != VTLLM_OK) {
    fprintf(stderr, "vtllm_engine_create: error %d: %s\n", rc, vtllm_last_error());
    return 1;
  }

  char* prompt = malloc(6 * strlen(argv[2]) + 1);
  char* request = malloc(6 * strlen(argv[2]) + 128);
  if (!prompt || !request) return 1;
  write_json_string(prompt, argv[2]);
  sprintf(request, "{\"prompt\": \"%s\", \"max_tokens\": %d, \"temperature\": 0}", prompt,
          max_tokens);
  free(prompt);

  char* response = NULL;
  rc = vtllm_complete(engine, request, &response);
  free(request);
  if (rc != VTLLM_OK) {
    fprintf(stderr, "vtllm_complete: error %d: %s\n", rc, vtllm_last_error());
    vtllm_engine_destroy(engine);
    return 1;
  }
  /* The response is {"id": ..., "choices": [{"index": 0, "text": "...", ...}], ...}. */
  const char* text = strstr(response, "\"text\":");
  if (!text || !(text = strchr(text + 7, '"'))) {
    fprintf(stderr, "no text in the response: %s\n", response);
    vtllm_free_string(response);
    vtllm_engine_destroy(engine);
    return 1;
  }
  print_json_string(text + 1);
  putchar('\n');
  vtllm_free_string(response);
  vtllm_engine_destroy(engine);
  return 0;
}
