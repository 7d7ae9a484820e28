/**
 * One request through Tollgate, with every error kind handled. Not compiled by the repository.
 */
import React, { useState } from 'react';
import { Button, SafeAreaView, ScrollView, Text } from 'react-native';
import { Tollgate, TollgateError } from '@tollgate/react-native';

interface ChatCompletion {
  choices: Array<{ message: { content: string } }>;
}

function describe(error: unknown): string {
  if (!(error instanceof TollgateError)) return String(error);
  switch (error.kind) {
    case 'attestationFailed':
      return error.reason === 'device_revoked'
        ? 'This device has been blocked by the operator.'
        : `This device could not be verified (${error.reason ?? 'attestation failed'}).`;
    case 'unauthorized':
      return 'The app token was refused: check it in the dashboard.';
    case 'rateLimited':
      return `Too many requests: try again in ${error.retryAfter ?? 'a few'} s.`;
    case 'secretNotFound':
      return 'The gateway has no OpenAI key for this app yet: add it in the dashboard.';
    case 'networkError':
      return `Network problem (${error.reason ?? 'unknown'}): check the connection and retry.`;
    case 'invalidRequest':
      return `Invalid request: ${error.message}`;
    case 'providerError':
      return `OpenAI answered ${error.status}: ${error.body}`;
  }
}

export default function App() {
  const [answer, setAnswer] = useState('');
  const [busy, setBusy] = useState(false);

  async function ask() {
    setBusy(true);
    try {
      const reply = await Tollgate.request<ChatCompletion>({
        endpoint: 'openai/v1/chat/completions',
        method: 'POST',
        body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello in three languages.' }] },
      });
      setAnswer(reply.choices[0]?.message.content ?? '');
    } catch (error) {
      setAnswer(describe(error));
    } finally {
      setBusy(false);
    }
  }

  return (
    <SafeAreaView style={{ flex: 1, padding: 16 }}>
      <Button title={busy ? 'Asking…' : 'Ask OpenAI through Tollgate'} onPress={ask} disabled={busy} />
      <ScrollView style={{ marginTop: 16 }}>
        <Text selectable>{answer}</Text>
      </ScrollView>
    </SafeAreaView>
  );
}
