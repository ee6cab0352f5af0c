import http from 'k6/http';
const rate = Number(__ENV.RATE);
export const options = {
  discardResponseBodies: true,
  noConnectionReuse: __ENV.MODE === 'close',
  summaryTrendStats: ['p(50)', 'p(99)', 'max'],
  scenarios: {
    main: {
      executor: 'constant-arrival-rate',
      rate: rate, timeUnit: '1s', duration: __ENV.DUR + 's',
      preAllocatedVUs: 200, maxVUs: 1000,
    },
  },
};
export default function () { http.get(__ENV.URL); }
