// Starts the controller and its web server together: what `grove app --web`
// and the Electron shell both run.
import { Controller } from './controller.js';
import { startWebServer, type WebOptions, type WebServer } from './server.js';

export interface RunningApp {
  controller: Controller;
  web: WebServer;
  stop(): Promise<void>;
}

export async function startApp(opts: WebOptions & { socketPath?: string }): Promise<RunningApp> {
  const controller = new Controller({ socketPath: opts.socketPath });
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
