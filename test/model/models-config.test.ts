// The model catalogue's configuration (CONTRACT §15): MODELS or MODELS_FILE,
// each entry checked at startup with one line naming the bad one, keys read
// from the variable an entry names and never echoed; unset, the single-model
// variables define the one model as before. The entry point itself stops on
// a bad entry with that line.
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, loadConfig } from '../../src/config.ts'
import { openModels } from '../../src/dependencies.ts'
import { keylessModels } from '../../src/models-config.ts'
import { killAllServers, runToExit, startReadyServer } from '../support/server-process.ts'

const KEY = 'sk-live-very-secret-0123456789'
const dir = mkdtempSync(join(tmpdir(), 'conduit-models-'))

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  await killAllServers()
})

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env)
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    return error as ConfigError
  }
  throw new Error('loadConfig accepted a bad catalogue')
}

const models = (entries: unknown) => ({ MODELS: JSON.stringify(entries) })

describe('MODELS', () => {
  test('unset: the single-model variables define the one model, as before', () => {
    expect(loadConfig({}).models).toEqual([
      {
        slug: 'local-echo',
        title: 'local-echo',
        provider: 'local',
        model: 'local-echo',
        baseUrl: 'https://api.openai.com/v1',
        apiKey: undefined,
        maxTokens: 8191,
        upstreamMaxTokens: undefined,
        reasoning: false,
        tools: false,
        contextTokens: undefined,
        systemPrompt: undefined,
        vision: false,
        isDefault: true,
      },
    ])
    const openai = loadConfig({
      MODEL_PROVIDER: 'openai',
      MODEL: 'llama3',
      OPENAI_BASE_URL: 'http://localhost:11434/v1/',
      OPENAI_API_KEY: KEY,
    }).models
    expect(openai).toMatchObject([
      { slug: 'llama3', provider: 'openai', baseUrl: 'http://localhost:11434/v1', apiKey: KEY },
    ])
  })

  test('a catalogue: defaults filled in, the marked default, the key of the named variable', () => {
    const config = loadConfig({
      ...models([
        { slug: 'echo', provider: 'local' },
        {
          slug: 'gpt',
          title: 'GPT-4o mini',
          provider: 'openai',
          model: 'gpt-4o-mini',
          api_key_env: 'MY_OPENAI_KEY',
          context_tokens: 128000,
          system_prompt: 'Be kind.',
          vision: true,
          default: true,
        },
        {
          slug: 'llama',
          provider: 'openai',
          base_url: 'http://127.0.0.1:8000/v1/',
          context_tokens: 8192,
          max_tokens: 1024,
        },
      ]),
      MY_OPENAI_KEY: KEY,
      OPENAI_BASE_URL: 'https://gateway.example.com/v1',
    })
    expect(config.models).toEqual([
      {
        slug: 'echo',
        title: 'echo',
        provider: 'local',
        model: 'echo',
        baseUrl: 'https://gateway.example.com/v1',
        apiKey: undefined,
        maxTokens: 8191,
        upstreamMaxTokens: undefined,
        reasoning: false,
        tools: false,
        contextTokens: undefined,
        systemPrompt: undefined,
        vision: false,
        isDefault: false,
      },
      {
        slug: 'gpt',
        title: 'GPT-4o mini',
        provider: 'openai',
        model: 'gpt-4o-mini',
        baseUrl: 'https://gateway.example.com/v1',
        apiKey: KEY,
        maxTokens: 8191,
        upstreamMaxTokens: undefined,
        reasoning: false,
        tools: false,
        contextTokens: 128000,
        systemPrompt: 'Be kind.',
        vision: true,
        isDefault: true,
      },
      {
        slug: 'llama',
        title: 'llama',
        provider: 'openai',
        model: 'llama',
        baseUrl: 'http://127.0.0.1:8000/v1',
        apiKey: undefined,
        maxTokens: 1024,
        upstreamMaxTokens: 1024,
        reasoning: false,
        tools: false,
        contextTokens: 8192,
        systemPrompt: undefined,
        vision: false,
        isDefault: false,
      },
    ])
    // The catalogue built from it: the default, and the tokenizer of each model.
    const catalogue = openModels(config)
    expect(catalogue.defaultModel.slug).toBe('gpt')
    expect(catalogue.models.map((model) => model.tokenizer)).toEqual([
      'estimate',
      'o200k_base',
      'estimate',
    ])
  })

  test('without a marked default the first entry is; a window without max_tokens keeps a quarter for the reply', () => {
    const config = loadConfig(
      models([
        { slug: 'a', provider: 'local', context_tokens: 4096 },
        { slug: 'b', provider: 'local', context_tokens: 200000 },
      ]),
    )
    expect(config.models.map((model) => [model.isDefault, model.maxTokens])).toEqual([
      [true, 1024],
      [false, 8191],
    ])
  })

  test('tools (CONTRACT §21): offered only to entries that say tools: true', () => {
    const config = loadConfig({
      MODELS: JSON.stringify([
        { slug: 'caller', provider: 'openai', base_url: 'http://127.0.0.1:1/v1', tools: true },
        { slug: 'plain', provider: 'openai', base_url: 'http://127.0.0.1:1/v1' },
        { slug: 'echo', provider: 'local' },
      ]),
    })
    expect(config.models.map((model) => [model.slug, model.tools])).toEqual([
      ['caller', true],
      ['plain', false],
      ['echo', false],
    ])
    expect(loadConfig({}).models[0]?.tools).toBe(false)
  })

  test("whether a model takes reasoning_effort: the entry's reasoning, else its name", () => {
    const config = loadConfig({
      ...models([
        { slug: 'o3-mini', provider: 'openai' },
        { slug: 'five', provider: 'openai', model: 'gpt-5.1' },
        { slug: 'routed', provider: 'openai', model: 'openai/o4-mini-high' },
        { slug: 'gpt-4o', provider: 'openai' },
        { slug: 'ollama', provider: 'openai', model: 'o3llama' },
        { slug: 'qwen', provider: 'openai', model: 'qwen3:32b', reasoning: true },
        { slug: 'not', provider: 'openai', model: 'o1', reasoning: false },
        { slug: 'echo', provider: 'local' },
      ]),
      // A self-hosted server: no key needed.
      OPENAI_BASE_URL: 'http://127.0.0.1:8000/v1',
    })
    expect(config.models.map((model) => [model.slug, model.reasoning])).toEqual([
      ['o3-mini', true],
      ['five', true],
      ['routed', true],
      ['gpt-4o', false],
      ['ollama', false],
      ['qwen', true],
      ['not', false],
      ['echo', false],
    ])
    expect(
      loadConfig({ MODEL_PROVIDER: 'openai', MODEL: 'o3', OPENAI_API_KEY: KEY }).models[0]
        ?.reasoning,
    ).toBe(true)
    expect(loadConfig({ MODEL: 'o3' }).models[0]?.reasoning).toBe(false)
  })

  test('MODELS_FILE names a JSON file holding the catalogue', () => {
    const file = join(dir, 'models.json')
    writeFileSync(file, JSON.stringify([{ slug: 'from-file', provider: 'local' }]))
    expect(loadConfig({ MODELS_FILE: file }).models.map((model) => model.slug)).toEqual([
      'from-file',
    ])
    expect(configError({ MODELS_FILE: join(dir, 'missing.json') }).message).toStartWith(
      'MODELS_FILE must name a readable file',
    )
    const bad = join(dir, 'bad.json')
    writeFileSync(bad, JSON.stringify([{ slug: 'x', provider: 'cloud' }]))
    expect(configError({ MODELS_FILE: bad }).message).toBe(
      'MODELS_FILE[0].provider must be one of local, openai; got "cloud"',
    )
    expect(configError({ MODELS_FILE: file, ...models([]) }).message).toContain('not both')
  })

  test('a bad entry stops loadConfig with one line naming it', () => {
    const ok = { slug: 'ok', provider: 'local' }
    const cases: [unknown, string][] = [
      [{}, 'MODELS must be a JSON array of 1 to 64 models'],
      [[], 'MODELS must be a JSON array of 1 to 64 models'],
      [[ok, 'gpt-4o'], 'MODELS[1] must be an object'],
      [
        [ok, ok, { slug: 'c', provider: 'anthropic' }],
        'MODELS[2].provider must be one of local, openai; got "anthropic"',
      ],
      [[{ provider: 'local' }], 'MODELS[0].slug is required'],
      [[{ slug: 'has space', provider: 'local' }], 'MODELS[0].slug must be up to 128 letters'],
      [
        [{ slug: 'a', provider: 'local', defualt: true }],
        'MODELS[0].defualt is not a field of a model',
      ],
      [[ok, { slug: 'ok', provider: 'local' }], 'MODELS[1].slug repeats "ok"'],
      [[{ slug: 'auto', provider: 'local' }], 'MODELS[0].slug must not be "auto"'],
      [
        [
          { ...ok, default: true },
          { slug: 'b', provider: 'local', default: true },
        ],
        'MODELS[1].default must not be true: MODELS[0] is the default already',
      ],
      [[{ ...ok, max_tokens: 0 }], 'MODELS[0].max_tokens must be a whole number from 1'],
      [[{ ...ok, context_tokens: 1.5 }], 'MODELS[0].context_tokens must be a whole number'],
      [
        [{ ...ok, context_tokens: 1000, max_tokens: 1000 }],
        'MODELS[0].max_tokens must be less than its context_tokens',
      ],
      [[{ ...ok, base_url: 'http://x.test/v1' }], 'MODELS[0].base_url is only for provider openai'],
      [
        [{ slug: 'o', provider: 'openai', base_url: 'ftp://x' }],
        'MODELS[0].base_url must be an http:// or https:// URL',
      ],
      [
        [{ slug: 'o', provider: 'openai', api_key_env: 'UNSET_KEY_VAR' }],
        'MODELS[0].api_key_env names the variable UNSET_KEY_VAR, which is not set',
      ],
      [[{ ...ok, default: 'yes' }], 'MODELS[0].default must be true or false'],
      [[{ ...ok, reasoning: true }], 'MODELS[0].reasoning is only for provider openai'],
      [[{ ...ok, tools: true }], 'MODELS[0].tools is only for provider openai'],
      [[{ slug: 'x', provider: 'openai', tools: 'yes' }], 'MODELS[0].tools must be true or false'],
      [
        [{ slug: 'o', provider: 'openai', reasoning: 'high' }],
        'MODELS[0].reasoning must be true or false',
      ],
      [
        [{ ...ok, system_prompt: 's'.repeat(20_001) }],
        'MODELS[0].system_prompt must be a text of at most 20000',
      ],
    ]
    for (const [entries, start] of cases) {
      const { message } = configError(models(entries))
      expect(message).toStartWith(start)
      expect(message).not.toContain('\n')
    }
    expect(configError({ MODELS: '[{"slug": "a",' }).message).toBe(
      'MODELS must be a JSON array of models; it is not valid JSON',
    )
  })

  test('a key is never echoed, wherever it was put by mistake', () => {
    const messages = [
      // Pasted where the variable name goes.
      configError(models([{ slug: 'o', provider: 'openai', api_key_env: KEY }])).message,
      // Pasted as a field's name.
      configError(models([{ slug: 'o', provider: 'openai', [KEY]: true }])).message,
      // Pasted as a field of its own.
      configError(models([{ slug: 'o', provider: 'openai', api_key: KEY }])).message,
      // Inside broken JSON (the parser's message would quote it).
      configError({ MODELS: `[{"slug": "o", "api_key": ${KEY}}]` }).message,
      // As a slug or a title (neither is ever shown).
      configError(models([{ slug: `${KEY} `, provider: 'openai' }])).message,
      configError(models([{ slug: 'o', title: `${KEY}`.repeat(10), provider: 'openai' }])).message,
      // In a URL.
      configError(models([{ slug: 'o', provider: 'openai', base_url: `ftp://user:${KEY}@x` }]))
        .message,
    ]
    for (const message of messages) {
      expect(message).toStartWith('MODELS')
      expect(message).not.toContain(KEY)
      expect(message).not.toContain('sk-live')
    }
  })
})

describe('an API key for OpenAI itself (issue #33)', () => {
  const NEEDS_KEY =
    'OPENAI_API_KEY must be set for MODEL_PROVIDER=openai at api.openai.com (OPENAI_BASE_URL); a self-hosted server may go without one'

  test('MODEL_PROVIDER=openai at api.openai.com without OPENAI_API_KEY stops loadConfig, naming it', () => {
    expect(configError({ MODEL_PROVIDER: 'openai' }).message).toBe(NEEDS_KEY)
    expect(
      configError({ MODEL_PROVIDER: 'openai', OPENAI_BASE_URL: 'https://API.openai.com./v1/' })
        .message,
    ).toBe(NEEDS_KEY)
    expect(loadConfig({ MODEL_PROVIDER: 'openai', OPENAI_API_KEY: KEY }).models[0]?.apiKey).toBe(
      KEY,
    )
  })

  test('another server (vLLM, Ollama) needs no key: the model is kept, and listed as keyless', () => {
    for (const url of ['http://127.0.0.1:11434/v1', 'https://openai.example.com/v1']) {
      const config = loadConfig({ MODEL_PROVIDER: 'openai', MODEL: 'llama3', OPENAI_BASE_URL: url })
      expect(config.models[0]).toMatchObject({ slug: 'llama3', apiKey: undefined })
      expect(keylessModels(config.models)).toEqual(['llama3'])
    }
    expect(keylessModels(loadConfig({}).models)).toEqual([])
    expect(
      keylessModels(loadConfig({ MODEL_PROVIDER: 'openai', OPENAI_API_KEY: KEY }).models),
    ).toEqual([])
  })

  test('a catalogue entry served by api.openai.com needs api_key_env; one served elsewhere does not', () => {
    expect(configError(models([{ slug: 'gpt', provider: 'openai' }])).message).toBe(
      'MODELS[0].api_key_env is required: the model is served by api.openai.com, which needs an API key',
    )
    expect(
      configError({
        ...models([
          { slug: 'local', provider: 'openai' },
          { slug: 'gpt', provider: 'openai', base_url: 'https://api.openai.com/v1' },
        ]),
        OPENAI_BASE_URL: 'http://127.0.0.1:8000/v1',
      }).message,
    ).toStartWith('MODELS[1].api_key_env is required')
    const config = loadConfig({
      ...models([
        { slug: 'vllm', provider: 'openai', base_url: 'http://127.0.0.1:8000/v1' },
        { slug: 'gpt', provider: 'openai', api_key_env: 'MY_KEY' },
        { slug: 'echo', provider: 'local' },
      ]),
      MY_KEY: KEY,
    })
    expect(keylessModels(config.models)).toEqual(['vllm'])
  })
})

describe('the entry point', () => {
  test('a bad entry stops the process at startup with one line naming it; the key is never written', async () => {
    const { code, stderr } = await runToExit({
      MODELS: JSON.stringify([
        { slug: 'fine', provider: 'openai', api_key_env: 'SECRET_FOR_FINE' },
        { slug: 'bad', provider: 'gemini' },
      ]),
      SECRET_FOR_FINE: KEY,
    })
    expect(code).toBe(1)
    expect(stderr).toBe('conduit: MODELS[1].provider must be one of local, openai; got "gemini"\n')
    expect(stderr).not.toContain(KEY)
  }, 30_000)

  test('MODEL_PROVIDER=openai at api.openai.com without a key stops the process with one line naming OPENAI_API_KEY', async () => {
    const { code, stderr } = await runToExit({ MODEL_PROVIDER: 'openai' })
    expect(code).toBe(1)
    expect(stderr.split('\n').filter((line) => line !== '')).toHaveLength(1)
    expect(stderr).toStartWith('conduit: OPENAI_API_KEY must be set')
  }, 30_000)

  test('a keyless model on another server starts, with one warning line naming it', async () => {
    const server = await startReadyServer({
      DATABASE_URL: 'memory://',
      MODEL_PROVIDER: 'openai',
      MODEL: 'llama3',
      // Nothing listens there: the server starts without asking it anything.
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
    })
    // The line saying where it listens comes after the warning, and logs are written off the loop.
    const lines = (await server.stdoutUntil((text) => text.includes('"url":')))
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { level: unknown; msg: string; models?: unknown })
    const warnings = lines.filter((line) => line.level === 'warn' || line.level === 40)
    expect(warnings).toHaveLength(1)
    expect(warnings[0]?.msg).toContain('no API key')
    expect(warnings[0]?.models).toEqual(['llama3'])
  }, 60_000)
})
