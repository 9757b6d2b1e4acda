// Starts the controller and its web server together: what `grove app --web`
// and the Electron shell both run.
import { Controller, type ControllerOptions } from './controller.js';
import { startWebServer, type WebOptions, type WebServer } from './server.js';

export interface RunningApp {
  controller: Controller;
  web: WebServer;
  stop(): Promise<void>;
}

export async function startApp(opts: WebOptions & ControllerOptions): Promise<RunningApp> {
  if (opts.desktopView === 'stream' && !opts.tls && !opts.tlsPem) throw new Error('streams are framed only over HTTPS: give the app a certificate');
  const controller = new Controller({ socketPath: opts.socketPath, desktopView: opts.desktopView });
  await controller.start();
  try {
    const web = await startWebServer(controller, opts);
    return {
      controller,
      web,
      stop: async () => {
        controller.stop();
        await web.close();
      },
    };
  } catch (err) {
    controller.stop();
    throw err;
  }
}
