// A minimal Flutter app using Tollgate: initialize in main() before runApp, then one request with every error handled.
// No provider key appears anywhere: the gateway adds it.
import 'package:flutter/foundation.dart';
import 'package:flutter/material.dart';
import 'package:tollgate/tollgate.dart';

Future<void> main() async {
  WidgetsFlutterBinding.ensureInitialized();
  await Tollgate.initialize(
    'at_YOUR_APP_TOKEN', // identifies the app; not a provider key
    // The gateway address comes from Info.plist (TollgateGatewayURL) and AndroidManifest.xml (dev.tollgate.GATEWAY_URL).
    // Simulators and emulators only, and only in debug builds (the SDK ignores it otherwise). Pass it at build time:
    // flutter run --dart-define=TOLLGATE_DEV_TOKEN=dt_...
    developmentToken: kDebugMode ? const String.fromEnvironment('TOLLGATE_DEV_TOKEN') : null,
  );
  runApp(const ExampleApp());
}

class ExampleApp extends StatelessWidget {
  const ExampleApp({super.key});

  @override
  Widget build(BuildContext context) => const MaterialApp(home: AskPage());
}

class AskPage extends StatefulWidget {
  const AskPage({super.key});

  @override
  State<AskPage> createState() => _AskPageState();
}

class _AskPageState extends State<AskPage> {
  String _reply = 'Tap the button.';

  Future<void> _ask() async {
    setState(() => _reply = 'Asking...');
    String reply;
    try {
      final response = await Tollgate.request(
        endpoint: 'openai/v1/chat/completions',
        method: 'POST',
        body: {
          'model': 'gpt-4o-mini',
          'messages': [
            {'role': 'user', 'content': 'Say hello in French.'},
          ],
        },
      );
      final json = response.json() as Map<String, dynamic>;
      reply = json['choices'][0]['message']['content'] as String;
    } on AttestationFailedException catch (error) {
      reply = error.reason == 'device_revoked'
          ? 'This device has been blocked by the operator.'
          : 'This device could not prove it runs the genuine app: ${error.message}';
    } on UnauthorizedException {
      reply = 'The app token was refused: ship the current one.';
    } on RateLimitedException catch (error) {
      reply = 'Busy: try again in ${error.retryAfter?.inSeconds ?? 5} s.';
    } on SecretNotFoundException {
      reply = 'The gateway has no key for this provider yet: add it in the dashboard.';
    } on NetworkException catch (error) {
      reply = 'Offline or the provider is unreachable: ${error.message}';
    } on InvalidRequestException catch (error) {
      reply = 'Bug in the request: ${error.message}';
    } on ProviderErrorException catch (error) {
      reply = 'The provider answered ${error.status}: ${error.body}';
    }
    if (mounted) setState(() => _reply = reply);
  }

  @override
  Widget build(BuildContext context) => Scaffold(
        appBar: AppBar(title: const Text('Tollgate example')),
        body: Padding(padding: const EdgeInsets.all(16), child: SingleChildScrollView(child: Text(_reply))),
        floatingActionButton: FloatingActionButton(onPressed: _ask, child: const Icon(Icons.send)),
      );
}
